package sortorder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// naiveInterleave is the definition of the z-order key, one bit at a
// time: bit 63 of every value, then bit 62 of every value, and so on.
func naiveInterleave(vals []uint64) []byte {
	out := make([]byte, 8*len(vals))
	pos := 0
	for bit := 63; bit >= 0; bit-- {
		for _, v := range vals {
			if v>>bit&1 == 1 {
				out[pos/8] |= 0x80 >> (pos % 8)
			}
			pos++
		}
	}
	return out
}

func TestInterleave(t *testing.T) {
	rep := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
	tests := []struct {
		vals []uint64
		want []byte
	}{
		{[]uint64{math.MaxUint64, 0}, rep(0xAA, 16)},
		{[]uint64{0, math.MaxUint64}, rep(0x55, 16)},
		{[]uint64{1 << 63, 0, 0}, append([]byte{0x80}, rep(0, 23)...)},
		{[]uint64{0, 0, 1}, append(rep(0, 23), 0x01)},
		{[]uint64{0, 0, 0, 1 << 63}, append([]byte{0x10}, rep(0, 31)...)},
		{[]uint64{math.MaxUint64, 0, 0, 0}, rep(0x88, 32)},
		// 3 = 0b11 in the last bits of column 0, 1 in column 1: the last
		// four key bits are x1 y1 x0 y0 = 1 0 1 1.
		{[]uint64{3, 1}, append(rep(0, 15), 0x0B)},
	}
	for _, tt := range tests {
		got := make([]byte, 8*len(tt.vals))
		interleave(got, tt.vals, spreadTable(len(tt.vals)))
		if !bytes.Equal(got, tt.want) {
			t.Errorf("interleave(%#x) = % x, want % x", tt.vals, got, tt.want)
		}
		if naive := naiveInterleave(tt.vals); !bytes.Equal(naive, tt.want) {
			t.Errorf("test table wrong for %#x: naive % x", tt.vals, naive)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for n := minZOrderColumns; n <= maxZOrderColumns; n++ {
		spread := spreadTable(n)
		for range 2000 {
			vals := make([]uint64, n)
			for i := range vals {
				vals[i] = rng.Uint64() >> rng.IntN(64)
			}
			got := make([]byte, 8*n)
			interleave(got, vals, spread)
			if want := naiveInterleave(vals); !bytes.Equal(got, want) {
				t.Fatalf("interleave(%#x) = % x, want % x", vals, got, want)
			}
		}
	}
}

// Two int columns of 0..3 come out in Morton (Z) order, column a's bit
// above column b's at each level.
func TestZOrderMorton(t *testing.T) {
	ctx, mem := checkedCtx(t)
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.Int32})
	var rows [][]any
	for a := range int32(4) {
		for b := range int32(4) {
			rows = append(rows, []any{a, b})
		}
	}
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	o, err := Parse("zorder(a, b)")
	if err != nil {
		t.Fatal(err)
	}
	bound, err := o.Bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bound.Sort(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	want := [][2]int32{
		{0, 0}, {0, 1}, {1, 0}, {1, 1},
		{0, 2}, {0, 3}, {1, 2}, {1, 3},
		{2, 0}, {2, 1}, {3, 0}, {3, 1},
		{2, 2}, {2, 3}, {3, 2}, {3, 3},
	}
	for k, w := range want {
		a, b := valueAt(t, got.Column(0), k), valueAt(t, got.Column(1), k)
		if a != w[0] || b != w[1] {
			t.Fatalf("row %d = (%v, %v), want (%d, %d)", k, a, b, w[0], w[1])
		}
	}
}

// zExpected is the package doc's normalisation table applied to a Go
// value (floats and decimals through the functions TestZNormalisationTable
// pins down).
func zExpected(v any) uint64 {
	flip := func(x int64) uint64 { return uint64(x) ^ 1<<63 }
	first8 := func(b []byte) uint64 {
		var pad [8]byte
		copy(pad[:], b)
		return binary.BigEndian.Uint64(pad[:])
	}
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1 << 63
		}
		return 0
	case int32:
		return flip(int64(v))
	case arrow.Date32:
		return flip(int64(v))
	case int64:
		return flip(v)
	case arrow.Time64:
		return flip(int64(v))
	case arrow.Timestamp:
		return flip(int64(v))
	case float32:
		return ordFloat64(float64(v))
	case float64:
		return ordFloat64(v)
	case decimal128.Num:
		return zDecimal(v.HighBits(), v.LowBits())
	case string:
		return first8([]byte(v))
	case []byte:
		return first8(v)
	case uuid.UUID:
		return first8(v[:])
	}
	panic(fmt.Sprintf("zExpected: %T", v))
}

// Each normalisation preserves order (a < b implies norm(a) <= norm(b)),
// maps equal values to equal numbers, nulls to 0 and NaN to the maximum.
func TestZNormalisationPreservesOrder(t *testing.T) {
	sc := allTypesSchema()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(11, 12))
	rows := genRows(rng, sc, 2000)
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	for c, col := range sortableColumns(sc) {
		c++ // rows include rowid
		t.Run(col, func(t *testing.T) {
			bound, err := Order{Fields: []Field{asc(col)}}.Bind(sc)
			if err != nil {
				t.Fatal(err)
			}
			rds, err := bound.readers(rec)
			if err != nil {
				t.Fatal(err)
			}
			z := func(i int) uint64 { return rds[0].zValue(i) }
			for i := range rows {
				if want := zExpected(rows[i][c]); z(i) != want {
					t.Fatalf("%#v normalises to %#x, want %#x", rows[i][c], z(i), want)
				}
				switch v := rows[i][c].(type) {
				case nil:
					if z(i) != 0 {
						t.Fatalf("null normalises to %#x, want 0", z(i))
					}
				case float32:
					if v != v && z(i) != math.MaxUint64 {
						t.Fatalf("NaN %#x normalises to %#x", math.Float32bits(v), z(i))
					}
				case float64:
					if v != v && z(i) != math.MaxUint64 {
						t.Fatalf("NaN %#x normalises to %#x", math.Float64bits(v), z(i))
					}
				}
			}
			pairs := 0
			for range 20000 {
				i, j := rng.IntN(len(rows)), rng.IntN(len(rows))
				a, b := rows[i][c], rows[j][c]
				if a == nil || b == nil {
					continue
				}
				pairs++
				switch cmp := refCompareValue(a, b); {
				case cmp < 0 && z(i) > z(j):
					t.Fatalf("%#v < %#v but normalised %#x > %#x", a, b, z(i), z(j))
				case cmp == 0 && z(i) != z(j):
					t.Fatalf("%#v == %#v but normalised %#x != %#x", a, b, z(i), z(j))
				}
			}
			if pairs < 10000 {
				t.Fatalf("only %d non-null pairs checked", pairs)
			}
		})
	}
}

// The normalisations the package doc lists, value by value.
func TestZNormalisationTable(t *testing.T) {
	tests := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"long -1", ordInt64(-1), 0x7FFFFFFFFFFFFFFF},
		{"long 0", ordInt64(0), 0x8000000000000000},
		{"long min", ordInt64(math.MinInt64), 0},
		{"double -0.0", ordFloat64(math.Copysign(0, -1)), 0x7FFFFFFFFFFFFFFF},
		{"double +0.0", ordFloat64(0), 0x8000000000000000},
		{"double +Inf", ordFloat64(math.Inf(1)), 0xFFF0000000000000},
		{"double -Inf", ordFloat64(math.Inf(-1)), 0x000FFFFFFFFFFFFF},
		{"double NaN", ordFloat64(math.NaN()), math.MaxUint64},
		{"double -NaN", ordFloat64(math.Float64frombits(0xFFF8000000000001)), math.MaxUint64},
		{"float 1.5 widened", ordFloat64(float64(float32(1.5))), ordFloat64(1.5)},
		{"decimal 5", zDecimal(decimal128.FromI64(5).HighBits(), decimal128.FromI64(5).LowBits()), ordInt64(5)},
		{"decimal -5", zDecimal(decimal128.FromI64(-5).HighBits(), decimal128.FromI64(-5).LowBits()), ordInt64(-5)},
		{"decimal max int64", zDecimal(0, math.MaxInt64), ordInt64(math.MaxInt64)},
		{"decimal 2^63 clamps", zDecimal(0, 1<<63), ordInt64(math.MaxInt64)},
		{"decimal 2^64 clamps", zDecimal(1, 0), ordInt64(math.MaxInt64)},
		{"decimal min int64", zDecimal(-1, 1<<63), ordInt64(math.MinInt64)},
		{"decimal -2^63-1 clamps", zDecimal(-1, math.MaxInt64), ordInt64(math.MinInt64)},
		{"string abc", prefix8("abc"), 0x6162630000000000},
		{"string longer than 8", prefix8("abcdefghij"), 0x6162636465666768},
		{"string a\\x00 ties with a", prefix8("a\x00"), prefix8("a")},
		{"bytes", prefix8([]byte{0xff, 1}), 0xFF01000000000000},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
}

// naiveQuantiles is the definition of Sort's per-batch scaling: each value
// becomes floor(2^64 * k / n), k the number of values smaller than it.
func naiveQuantiles(vals []uint64) []uint64 {
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	n := big.NewInt(int64(len(vals)))
	out := make([]uint64, len(vals))
	for i, v := range vals {
		k, _ := slices.BinarySearch(sorted, v) // first index of v: the count of smaller values
		q := new(big.Int).Lsh(big.NewInt(int64(k)), 64)
		out[i] = q.Div(q, n).Uint64()
	}
	return out
}

func TestToQuantiles(t *testing.T) {
	tests := []struct{ in, want []uint64 }{
		{[]uint64{5, 1, 5, 9}, []uint64{1 << 62, 0, 1 << 62, 3 << 62}},
		{[]uint64{7, 7, 7}, []uint64{0, 0, 0}},
		{[]uint64{math.MaxUint64, 0}, []uint64{1 << 63, 0}},
		{[]uint64{3, 2, 1}, []uint64{0xAAAAAAAAAAAAAAAA, 0x5555555555555555, 0}},
		{[]uint64{}, []uint64{}},
	}
	for _, tt := range tests {
		got := slices.Clone(tt.in)
		toQuantiles(got, make([]valueRow, len(got)))
		if !slices.Equal(got, tt.want) {
			t.Errorf("toQuantiles(%#x) = %#x, want %#x", tt.in, got, tt.want)
		}
		if naive := naiveQuantiles(tt.in); !slices.Equal(naive, tt.want) {
			t.Errorf("test table wrong for %#x: naive %#x", tt.in, naive)
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 200 {
		in := make([]uint64, 1+rng.IntN(300))
		for i := range in {
			in[i] = rng.Uint64() >> rng.IntN(64) % uint64(1+rng.IntN(50))
		}
		got := slices.Clone(in)
		toQuantiles(got, make([]valueRow, len(got)))
		if want := naiveQuantiles(in); !slices.Equal(got, want) {
			t.Fatalf("toQuantiles(%v) = %v, want %v", in, got, want)
		}
	}
}

// Sort with a z-order is the stable sort by the interleaved per-batch
// quantiles of the normalised values, for 2, 3 and 4 columns of every
// type.
func TestZOrderSortMatchesReference(t *testing.T) {
	ctx, mem := checkedCtx(t)
	sc := allTypesSchema()
	cols := sortableColumns(sc)
	rng := rand.New(rand.NewPCG(21, 22))
	rows := genRows(rng, sc, 600)
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	for iter := range 60 {
		o := Order{ZOrder: true}
		for _, k := range rng.Perm(len(cols))[:minZOrderColumns+iter%3] {
			o.Fields = append(o.Fields, asc(cols[k]))
		}
		bound, err := o.Bind(sc)
		if err != nil {
			t.Fatal(err)
		}
		rds, err := bound.readers(rec)
		if err != nil {
			t.Fatal(err)
		}
		quant := make([][]uint64, len(rds))
		for c := range rds {
			raw := make([]uint64, len(rows))
			for r := range raw {
				raw[r] = rds[c].zValue(r)
			}
			quant[c] = naiveQuantiles(raw)
		}
		keys := make([][]byte, len(rows))
		for r := range rows {
			vals := make([]uint64, len(rds))
			for c := range rds {
				vals[c] = quant[c][r]
			}
			keys[r] = naiveInterleave(vals)
		}
		perm := make([]int, len(rows))
		for i := range perm {
			perm[i] = i
		}
		slices.SortStableFunc(perm, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
		got, err := bound.Sort(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(o.String(), func(t *testing.T) { checkSorted(t, got, rows, perm) })
		got.Release()
	}
}

func TestZOrderNullsFirstNaNLast(t *testing.T) {
	ctx, mem := checkedCtx(t)
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 2, Name: "y", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 3, Name: "tag", Type: iceberg.PrimitiveTypes.String})
	nan32 := float32(math.NaN())
	rows := [][]any{
		{1.0, float32(1), "mid"},
		{math.NaN(), nan32, "nan"},
		{math.Inf(1), float32(math.Inf(1)), "inf"},
		{nil, nil, "null"},
		{math.Inf(-1), float32(math.Inf(-1)), "-inf"},
		{-1.0, float32(-1), "-mid"},
	}
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	bound, err := Order{ZOrder: true, Fields: []Field{asc("x"), asc("y")}}.Bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bound.Sort(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	var tags []string
	for k := range int(got.NumRows()) {
		tags = append(tags, fmt.Sprint(valueAt(t, got.Column(2), k)))
	}
	if want := []string{"null", "-inf", "-mid", "mid", "inf", "nan"}; !slices.Equal(tags, want) {
		t.Fatalf("z-order %v, want %v", tags, want)
	}
}

// Columns of very different magnitudes all shape a z-order: split into
// four equal parts ("files"), a z-ordered batch of a long in [0, 10000)
// and a double in [0, 1e6) gives every part about half of each column's
// range (a 2x2 grid), where the raw normalised values would let the
// double's exponent bits decide alone (every part spanning all of x).
func TestZOrderBalancesMagnitudes(t *testing.T) {
	ctx, mem := checkedCtx(t)
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "y", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz})
	rng := rand.New(rand.NewPCG(4, 4))
	const n, parts = 4000, 4
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{rng.Int64N(10_000), rng.Float64() * 1e6, arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(86_400_000_000))}
	}
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	for _, spec := range []string{"zorder(x, y)", "zorder(y, x)", "zorder(ts, x)", "zorder(x, ts)"} {
		o, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		bound, err := o.Bind(sc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bound.Sort(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range o.Fields {
			col := slices.Index(sortableNames(sc), f.Column)
			var full, sum float64
			lo, hi := math.Inf(1), math.Inf(-1)
			for p := range parts {
				plo, phi := math.Inf(1), math.Inf(-1)
				for k := p * n / parts; k < (p+1)*n/parts; k++ {
					v := asFloat(valueAt(t, got.Column(col), k))
					plo, phi = min(plo, v), max(phi, v)
				}
				sum += phi - plo
				lo, hi = min(lo, plo), max(hi, phi)
			}
			full = hi - lo
			// A 2x2 grid gives 2 full ranges in all; unclustered, 4.
			if sum > 2.5*full {
				t.Errorf("%s: the %d parts span %.1f full ranges of %s in all; want at most 2.5", spec, parts, sum/full, f.Column)
			}
		}
		got.Release()
	}
}

func sortableNames(sc *iceberg.Schema) []string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, f.Name)
	}
	return out
}

func asFloat(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case arrow.Timestamp:
		return float64(v)
	}
	panic(fmt.Sprintf("asFloat(%T)", v))
}
