package sortorder

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// This file builds the test tables: an Iceberg schema with one column of
// every supported type, random rows of Go values (nil is null) rich in the
// values encodings get wrong, Arrow batches built from them with the
// ordinary builders, and a reference comparator on the Go values that
// knows nothing of the byte encodings.

// allTypesSchema has rowid (never sorted on: it tells where each output row
// came from) and one optional column of each supported type.
func allTypesSchema() *iceberg.Schema {
	return iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "rowid", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 3, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 6, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 7, Name: "dec", Type: iceberg.DecimalTypeOf(38, 2)},
		iceberg.NestedField{ID: 8, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 9, Name: "tm", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 10, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 11, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 12, Name: "tsns", Type: iceberg.PrimitiveTypes.TimestampNs},
		iceberg.NestedField{ID: 13, Name: "tstzns", Type: iceberg.PrimitiveTypes.TimestampTzNs},
		iceberg.NestedField{ID: 14, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 15, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 16, Name: "fx", Type: iceberg.FixedTypeOf(3)},
		iceberg.NestedField{ID: 17, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
	)
}

// sortableColumns are allTypesSchema's columns other than rowid.
func sortableColumns(sc *iceberg.Schema) []string {
	var out []string
	for _, f := range sc.Fields()[1:] {
		out = append(out, f.Name)
	}
	return out
}

func arrowSchema(t testing.TB, sc *iceberg.Schema, ids, large bool) *arrow.Schema {
	t.Helper()
	as, err := table.SchemaToArrowSchema(sc, nil, ids, large)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// pick returns one of the special values most of the time, so ties (and
// the stability they test) are common, else a random one.
func pick[T any](rng *rand.Rand, specials []T, random func() T) T {
	if rng.IntN(10) < 7 {
		return specials[rng.IntN(len(specials))]
	}
	return random()
}

var (
	float64Specials = []float64{0, math.Copysign(0, -1), 1.5, -1.5, 3, math.Inf(1), math.Inf(-1),
		math.NaN(), math.Float64frombits(0xFFF8000000000001), math.Float64frombits(0x7FF0000000000001),
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64}
	float32Specials = []float32{0, float32(math.Copysign(0, -1)), 1.5, -1.5, 3, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7FC00000), math.Float32frombits(0xFFC00001), math.Float32frombits(0x7F800001),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32}
	int64Specials  = []int64{math.MinInt64, math.MinInt64 + 1, -86_400_000_000, -1, 0, 1, 2, 86_400_000_000, math.MaxInt64}
	int32Specials  = []int32{math.MinInt32, -719_162, -1, 0, 1, 2, 19_000, math.MaxInt32}
	stringSpecials = []string{"", "a", "a\x00", "a\x00\x00", "a\x00b", "a\x01", "ab", "b", "\x00", "\x00\x00",
		"\xff", "\xff\xff", "é", "aaaaaaaa", "aaaaaaaa\x00", "aaaaaaaab", "aaaaaaab"}
	decimalSpecials = []decimal128.Num{
		decimal128.FromI64(0), decimal128.FromI64(1), decimal128.FromI64(-1), decimal128.FromI64(12345),
		decimal128.FromI64(-12345), decimal128.FromI64(math.MaxInt64), decimal128.FromI64(math.MinInt64),
		decimal128.New(0, 1<<63),                                // MaxInt64 + 1
		decimal128.New(-1, math.MaxInt64),                       // MinInt64 - 1
		decimal128.New(0, math.MaxUint64),                       // 2^64 - 1
		decimal128.New(1, 0),                                    // 2^64
		decimal128.New(-1, 0),                                   // -2^64
		decimal128.New(0x4B3B4CA85A86C47A, 0x098A223FFFFFFFFF),  // 10^38 - 1
		decimal128.New(-0x4B3B4CA85A86C47B, 0xF675DDC000000001), // -(10^38 - 1)
	}
)

func randBytes(rng *rand.Rand, alphabet []byte, maxLen int) []byte {
	b := make([]byte, rng.IntN(maxLen+1))
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}

// genValue returns a random non-null Go value for column type t.
func genValue(rng *rand.Rand, t iceberg.Type) any {
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0xff}
	switch t := t.(type) {
	case iceberg.BooleanType:
		return rng.IntN(2) == 0
	case iceberg.Int32Type:
		return pick(rng, int32Specials, func() int32 { return int32(rng.Uint32()) })
	case iceberg.DateType:
		return arrow.Date32(pick(rng, int32Specials, func() int32 { return int32(rng.IntN(80_000)) - 40_000 }))
	case iceberg.Int64Type:
		return pick(rng, int64Specials, func() int64 { return int64(rng.Uint64()) })
	case iceberg.TimeType:
		return arrow.Time64(pick(rng, []int64{0, 1, 86_399_999_999, 43_200_000_000}, func() int64 { return rng.Int64N(86_400_000_000) }))
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return arrow.Timestamp(pick(rng, int64Specials, func() int64 { return int64(rng.Uint64()) >> rng.IntN(40) }))
	case iceberg.Float32Type:
		return pick(rng, float32Specials, func() float32 { return float32(rng.NormFloat64() * 1e3) })
	case iceberg.Float64Type:
		return pick(rng, float64Specials, func() float64 { return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)) })
	case iceberg.DecimalType:
		return pick(rng, decimalSpecials, func() decimal128.Num {
			n := decimal128.FromI64(int64(rng.Uint64()) >> rng.IntN(64))
			if rng.IntN(4) == 0 { // beyond int64
				n = n.Mul(decimal128.FromI64(1_000_000_007))
			}
			return n
		})
	case iceberg.StringType:
		return pick(rng, stringSpecials, func() string { return string(randBytes(rng, alphabet, 10)) })
	case iceberg.BinaryType:
		return []byte(pick(rng, stringSpecials, func() string { return string(randBytes(rng, alphabet, 10)) }))
	case iceberg.FixedType:
		b := make([]byte, t.Len())
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	case iceberg.UUIDType:
		specials := []uuid.UUID{{}, uuid.Max, uuid.MustParse("00000000-0000-0000-0000-000000000001"), uuid.MustParse("01000000-0000-0000-0000-000000000000")}
		return pick(rng, specials, func() uuid.UUID {
			// Mostly zeros, so values share prefixes of various lengths.
			var u uuid.UUID
			u[rng.IntN(16)] = byte(rng.UintN(256))
			u[rng.IntN(16)] = byte(rng.UintN(256))
			return u
		})
	}
	panic(fmt.Sprintf("genValue: no generator for %s", t))
}

// genRows returns n rows of sc: rowid is the row number, every other
// column is null about one time in six.
func genRows(rng *rand.Rand, sc *iceberg.Schema, n int) [][]any {
	rows := make([][]any, n)
	fields := sc.Fields()
	for r := range rows {
		row := make([]any, len(fields))
		row[0] = int64(r)
		for c, f := range fields[1:] {
			if rng.IntN(6) == 0 {
				continue
			}
			row[c+1] = genValue(rng, f.Type)
		}
		rows[r] = row
	}
	return rows
}

// buildRecord builds an Arrow batch of rows with the ordinary builders.
func buildRecord(t testing.TB, mem memory.Allocator, as *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	rb := array.NewRecordBuilder(mem, as)
	defer rb.Release()
	for _, row := range rows {
		for c, v := range row {
			appendValue(t, rb.Field(c), v)
		}
	}
	return rb.NewRecordBatch()
}

func appendValue(t testing.TB, b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.Time64Builder:
		b.Append(v.(arrow.Time64))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	case *extensions.UUIDBuilder:
		b.Append(v.(uuid.UUID))
	default:
		t.Fatalf("appendValue: no case for builder %T", b)
	}
}

// valueAt reads row i of arr back as the Go value genValue made (nil for
// null).
func valueAt(t testing.TB, arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i)
	case *array.Date32:
		return a.Value(i)
	case *array.Time64:
		return a.Value(i)
	case *array.Timestamp:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return bytes.Clone(a.Value(i))
	case *array.LargeBinary:
		return bytes.Clone(a.Value(i))
	case *array.FixedSizeBinary:
		return bytes.Clone(a.Value(i))
	case *extensions.UUIDArray:
		return a.Value(i)
	}
	t.Fatalf("valueAt: no case for %T", arr)
	return nil
}

// sameValue is exact equality, floats compared bit for bit (NaN payloads
// and the sign of zero included).
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case float32:
		b, ok := b.(float32)
		return ok && math.Float32bits(a) == math.Float32bits(b)
	case float64:
		b, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(b)
	case []byte:
		b, ok := b.([]byte)
		return ok && bytes.Equal(a, b)
	}
	return a == b
}

// refCompareFloat orders floats as Iceberg does: -0.0 before +0.0, NaN
// (any) after +Inf and equal to every other NaN. Written with plain
// comparisons, not bit tricks.
func refCompareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	case a == 0: // both zero: -0.0 first
		sa, sb := math.Signbit(a), math.Signbit(b)
		if sa && !sb {
			return -1
		}
		if !sa && sb {
			return 1
		}
	}
	return 0
}

// refCompareValue compares two non-null Go values of one column.
func refCompareValue(a, b any) int {
	switch a := a.(type) {
	case bool:
		bb := b.(bool)
		switch {
		case a == bb:
			return 0
		case !a:
			return -1
		}
		return 1
	case int32:
		return cmp.Compare(a, b.(int32))
	case int64:
		return cmp.Compare(a, b.(int64))
	case arrow.Date32:
		return cmp.Compare(a, b.(arrow.Date32))
	case arrow.Time64:
		return cmp.Compare(a, b.(arrow.Time64))
	case arrow.Timestamp:
		return cmp.Compare(a, b.(arrow.Timestamp))
	case float32:
		return refCompareFloat(float64(a), float64(b.(float32)))
	case float64:
		return refCompareFloat(a, b.(float64))
	case decimal128.Num:
		return a.BigInt().Cmp(b.(decimal128.Num).BigInt())
	case string:
		return strings.Compare(a, b.(string))
	case []byte:
		return bytes.Compare(a, b.([]byte))
	case uuid.UUID:
		bu := b.(uuid.UUID)
		return bytes.Compare(a[:], bu[:])
	}
	panic(fmt.Sprintf("refCompareValue: %T", a))
}

// refCompareRows compares two rows (Go values) in a linear order whose
// fields are columns cols of the rows.
func refCompareRows(o Order, cols []int, x, y []any) int {
	for k, f := range o.Fields {
		a, b := x[cols[k]], y[cols[k]]
		switch {
		case a == nil && b == nil:
			continue
		case a == nil:
			if f.NullsFirst {
				return -1
			}
			return 1
		case b == nil:
			if f.NullsFirst {
				return 1
			}
			return -1
		}
		c := refCompareValue(a, b)
		if f.Descending {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// columnIndexes maps an order's columns to positions in sc.
func columnIndexes(t testing.TB, sc *iceberg.Schema, o Order) []int {
	t.Helper()
	out := make([]int, len(o.Fields))
	for k, f := range o.Fields {
		out[k] = -1
		for i, sf := range sc.Fields() {
			if sf.Name == f.Column {
				out[k] = i
			}
		}
		if out[k] < 0 {
			t.Fatalf("no column %q", f.Column)
		}
	}
	return out
}
