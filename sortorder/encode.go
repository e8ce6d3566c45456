package sortorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// fieldIDKey is the Arrow field metadata key iceberg-go (and Parquet)
// carry Iceberg field ids under (table.ArrowParquetFieldIDKey).
const fieldIDKey = "PARQUET:field_id"

// Null markers of a linear key. A value's marker sits between the two
// null markers, so a null lands first or last whatever the direction; the
// marker byte is never inverted.
const (
	markerNullFirst byte = 0x00
	markerValue     byte = 0x01
	markerNullLast  byte = 0x02
)

// reader reads one bound column of one batch. Exactly one of the value
// accessors is set, by the column's kind; they index the array's values
// directly (already offset for sliced arrays) and never allocate.
type reader struct {
	col   *boundCol
	arr   arrow.Array // storage array (extension types unwrapped)
	nulls bool        // arr has nulls: only then is validity checked per row

	boolean *array.Boolean
	i64     func(i int) int64           // every integer-like kind
	f32     func(i int) float32         // float
	f64     func(i int) float64         // double
	dec     func(i int) (int64, uint64) // decimal: unscaled int128 as (hi, lo)
	raw     func(i int) []byte          // fixed, uuid: exactly col.width bytes
	vr      varReader                   // string, binary
}

func (rd *reader) isNull(i int) bool { return rd.nulls && rd.arr.IsNull(i) }

// readers finds the bound columns in rec and checks their Arrow types.
// Columns are matched by Iceberg field id when the batch schema carries
// ids (so a renamed column is still found, and a same-named different
// column is not), else by name.
func (b Bound) readers(rec arrow.RecordBatch) ([]reader, error) {
	if len(b.cols) == 0 {
		return nil, errors.New("sortorder: use of a zero Bound (get one from Order.Bind)")
	}
	sc := rec.Schema()
	ids := make([]int, sc.NumFields())
	byID := false
	for i := range ids {
		ids[i] = -1
		md := sc.Field(i).Metadata
		if k := md.FindKey(fieldIDKey); k >= 0 {
			if id, err := strconv.Atoi(md.Values()[k]); err == nil {
				ids[i], byID = id, true
			}
		}
	}
	out := make([]reader, len(b.cols))
	for ci := range b.cols {
		c := &b.cols[ci]
		idx := -1
		for i := range ids {
			if (byID && ids[i] == c.id) || (!byID && sc.Field(i).Name == c.name) {
				idx = i
				break
			}
		}
		if idx < 0 {
			names := make([]string, sc.NumFields())
			for i := range names {
				names[i] = sc.Field(i).Name
			}
			how := "name"
			if byID {
				how = "field id " + strconv.Itoa(c.id)
			}
			return nil, fmt.Errorf("sort column %q: no batch column with its %s (batch columns: %s)", c.name, how, strings.Join(names, ", "))
		}
		rd, err := newReader(c, rec.Column(idx))
		if err != nil {
			return nil, err
		}
		out[ci] = rd
	}
	return out, nil
}

// ints adapts any integer-valued Arrow values slice to one accessor.
func ints[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32](v []T) func(int) int64 {
	return func(i int) int64 { return int64(v[i]) }
}

// newReader checks that arr holds Arrow data the column's Iceberg type
// can be read from (see the package doc) and sets up its accessor.
func newReader(c *boundCol, arr arrow.Array) (reader, error) {
	orig := arr.DataType()
	if ext, ok := arr.(array.ExtensionArray); ok {
		arr = ext.Storage()
	}
	rd := reader{col: c, arr: arr, nulls: arr.NullN() > 0}
	switch c.kind {
	case kindBool:
		rd.boolean, _ = arr.(*array.Boolean)
		if rd.boolean == nil {
			break
		}
		return rd, nil
	case kindInt:
		switch a := arr.(type) {
		case *array.Int32:
			rd.i64 = ints(a.Int32Values())
		case *array.Int16:
			rd.i64 = ints(a.Int16Values())
		case *array.Int8:
			rd.i64 = ints(a.Int8Values())
		case *array.Uint16:
			rd.i64 = ints(a.Uint16Values())
		case *array.Uint8:
			rd.i64 = ints(a.Uint8Values())
		}
	case kindDate:
		if a, ok := arr.(*array.Date32); ok {
			rd.i64 = ints(a.Date32Values())
		}
	case kindLong:
		switch a := arr.(type) {
		case *array.Int64:
			rd.i64 = ints(a.Int64Values())
		case *array.Int32:
			rd.i64 = ints(a.Int32Values())
		case *array.Int16:
			rd.i64 = ints(a.Int16Values())
		case *array.Int8:
			rd.i64 = ints(a.Int8Values())
		case *array.Uint32:
			rd.i64 = ints(a.Uint32Values())
		case *array.Uint16:
			rd.i64 = ints(a.Uint16Values())
		case *array.Uint8:
			rd.i64 = ints(a.Uint8Values())
		}
	case kindTime:
		// Units must match the Iceberg type: converting here would make
		// keys of one batch incomparable with another's if units differed.
		if a, ok := arr.(*array.Time64); ok && a.DataType().(*arrow.Time64Type).Unit == arrow.Microsecond {
			rd.i64 = ints(a.Time64Values())
		}
	case kindTsMicro, kindTsNano:
		unit := arrow.Microsecond
		if c.kind == kindTsNano {
			unit = arrow.Nanosecond
		}
		if a, ok := arr.(*array.Timestamp); ok && a.DataType().(*arrow.TimestampType).Unit == unit {
			rd.i64 = ints(a.TimestampValues())
		}
	case kindFloat:
		if a, ok := arr.(*array.Float32); ok {
			v := a.Float32Values()
			rd.f32 = func(i int) float32 { return v[i] }
		}
	case kindDouble:
		switch a := arr.(type) {
		case *array.Float64:
			v := a.Float64Values()
			rd.f64 = func(i int) float64 { return v[i] }
		case *array.Float32:
			v := a.Float32Values()
			rd.f64 = func(i int) float64 { return float64(v[i]) }
		}
	case kindDecimal:
		dt, ok := arr.DataType().(arrow.DecimalType)
		if !ok {
			break
		}
		if dt.GetScale() != c.scale {
			return reader{}, fmt.Errorf("sort column %q (%s) holds Arrow %s: scale %d, not the schema's %d", c.name, c.typ, orig, dt.GetScale(), c.scale)
		}
		switch a := arr.(type) {
		case *array.Decimal128:
			v := a.Values()
			rd.dec = func(i int) (int64, uint64) { return v[i].HighBits(), v[i].LowBits() }
		case *array.Decimal64:
			v := a.Values()
			rd.dec = func(i int) (int64, uint64) { x := int64(v[i]); return x >> 63, uint64(x) }
		case *array.Decimal32:
			v := a.Values()
			rd.dec = func(i int) (int64, uint64) { x := int64(v[i]); return x >> 63, uint64(x) }
		}
	case kindString:
		switch a := arr.(type) {
		case *array.String:
			rd.vr = varOf[string, *array.String]{a}
		case *array.LargeString:
			rd.vr = varOf[string, *array.LargeString]{a}
		case *array.StringView:
			rd.vr = varOf[string, *array.StringView]{a}
		}
	case kindBinary:
		switch a := arr.(type) {
		case *array.Binary:
			rd.vr = varOf[[]byte, *array.Binary]{a}
		case *array.LargeBinary:
			rd.vr = varOf[[]byte, *array.LargeBinary]{a}
		case *array.BinaryView:
			rd.vr = varOf[[]byte, *array.BinaryView]{a}
		case *array.FixedSizeBinary:
			rd.vr = varOf[[]byte, *array.FixedSizeBinary]{a}
		}
	case kindFixed, kindUUID:
		if a, ok := arr.(*array.FixedSizeBinary); ok && a.DataType().(*arrow.FixedSizeBinaryType).ByteWidth == c.width {
			rd.raw = a.Value
		}
	}
	if rd.i64 == nil && rd.f32 == nil && rd.f64 == nil && rd.dec == nil && rd.raw == nil && rd.vr == nil {
		return reader{}, fmt.Errorf("sort column %q (%s) holds Arrow type %s, which cannot be read as %s", c.name, c.typ, orig, c.typ)
	}
	return rd, nil
}

// cursor says where each row's next key bytes go: at a fixed stride when
// every key has the same length (no per-row bookkeeping), else at a
// per-row position that advances as fields are written.
type cursor struct {
	pos    []int
	stride int
	base   int
}

func (c *cursor) at(r int) int {
	if c.pos != nil {
		return c.pos[r]
	}
	return r*c.stride + c.base
}

func (c *cursor) advance(r, n int) {
	if c.pos != nil {
		c.pos[r] += n
	}
}

// Order-preserving unsigned encodings. Each maps ascending values to
// ascending unsigned integers (compared as big-endian bytes).

func ordInt32(v int32) uint32 { return uint32(v) ^ 1<<31 }
func ordInt64(v int64) uint64 { return uint64(v) ^ 1<<63 }

// ordFloat64 is IEEE 754's total order with NaN canonicalised: negatives
// have all bits inverted (larger magnitude -> smaller), non-negatives get
// the sign bit set (above every negative). -0.0 lands just below +0.0.
// Every NaN, whatever its sign and payload, maps to the maximum, above
// +Inf, as Iceberg and Spark order NaN as the largest value.
func ordFloat64(f float64) uint64 {
	if f != f {
		return math.MaxUint64
	}
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

func ordFloat32(f float32) uint32 {
	if f != f {
		return math.MaxUint32
	}
	b := math.Float32bits(f)
	if b>>31 != 0 {
		return ^b
	}
	return b | 1<<31
}

// encodedLen is the number of bytes row r adds to a linear key.
func (rd *reader) encodedLen(r int) int {
	if rd.isNull(r) {
		if rd.col.width == 0 {
			return 1
		}
		return 1 + rd.col.width
	}
	if rd.col.width == 0 {
		return 1 + rd.vr.encodedLen(r)
	}
	return 1 + rd.col.width
}

// encodeLinear writes the column's part of the linear key of rows lo..hi-1
// (row r at cur.at(r-lo)).
func (rd *reader) encodeLinear(dst []byte, cur *cursor, lo, hi int) {
	c := rd.col
	nullMarker := markerNullLast
	if c.nullsFirst {
		nullMarker = markerNullFirst
	}
	for r := lo; r < hi; r++ {
		p := cur.at(r - lo)
		if rd.isNull(r) {
			dst[p] = nullMarker
			// Pad fixed-width nulls with zeros so every null of the
			// column compares equal and the next field starts at the same
			// offset in every key.
			clear(dst[p+1 : p+1+c.width])
			cur.advance(r-lo, 1+c.width)
			continue
		}
		dst[p] = markerValue
		v := dst[p+1:]
		n := c.width
		switch c.kind {
		case kindBool:
			v[0] = 0
			if rd.boolean.Value(r) {
				v[0] = 1
			}
		case kindInt, kindDate:
			binary.BigEndian.PutUint32(v, ordInt32(int32(rd.i64(r))))
		case kindLong, kindTime, kindTsMicro, kindTsNano:
			binary.BigEndian.PutUint64(v, ordInt64(rd.i64(r)))
		case kindFloat:
			binary.BigEndian.PutUint32(v, ordFloat32(rd.f32(r)))
		case kindDouble:
			binary.BigEndian.PutUint64(v, ordFloat64(rd.f64(r)))
		case kindDecimal:
			hi, lo := rd.dec(r)
			binary.BigEndian.PutUint64(v, ordInt64(hi))
			binary.BigEndian.PutUint64(v[8:], lo)
		case kindFixed, kindUUID:
			copy(v[:n], rd.raw(r))
		case kindString, kindBinary:
			n = rd.vr.put(v, r)
		}
		if c.desc {
			// Inverting every value byte reverses the order: fixed-width
			// encodings trivially, variable-length ones because they are
			// prefix-free (see varOf.put).
			for k := range v[:n] {
				v[k] = ^v[k]
			}
		}
		cur.advance(r-lo, 1+n)
	}
}

// zValue is the z-order normalisation of row r: an order-preserving
// unsigned 64-bit number (see the package doc), 0 for a null.
func (rd *reader) zValue(r int) uint64 {
	if rd.isNull(r) {
		return 0
	}
	switch rd.col.kind {
	case kindBool:
		if rd.boolean.Value(r) {
			return 1 << 63
		}
		return 0
	case kindInt, kindDate, kindLong, kindTime, kindTsMicro, kindTsNano:
		return ordInt64(rd.i64(r))
	case kindFloat:
		return ordFloat64(float64(rd.f32(r)))
	case kindDouble:
		return ordFloat64(rd.f64(r))
	case kindDecimal:
		return zDecimal(rd.dec(r))
	case kindFixed, kindUUID:
		return prefix8(rd.raw(r))
	default:
		return rd.vr.prefix(r)
	}
}

// zDecimal clamps an unscaled int128 to int64 and encodes it as a long:
// exact for every value that fits, and still monotone beyond.
func zDecimal(hi int64, lo uint64) uint64 {
	switch {
	case hi == 0 && lo <= math.MaxInt64, hi == -1 && lo > math.MaxInt64:
		return ordInt64(int64(lo))
	case hi < 0:
		return ordInt64(math.MinInt64)
	default:
		return ordInt64(math.MaxInt64)
	}
}

// prefix8 is the first 8 bytes of b as a big-endian number, zero-padded
// on the right.
func prefix8[S ~string | ~[]byte](b S) uint64 {
	var x uint64
	for k := 0; k < 8; k++ {
		x <<= 8
		if k < len(b) {
			x |= uint64(b[k])
		}
	}
	return x
}

// varReader reads a string or binary column for keys.
type varReader interface {
	// encodedLen is the escaped length of row i, terminator included.
	encodedLen(i int) int
	// put writes row i escaped and terminated to dst and returns the
	// number of bytes written.
	put(dst []byte, i int) int
	// prefix is prefix8 of row i.
	prefix(i int) uint64
}

// varOf is a varReader over any Arrow array whose values are strings or
// byte slices (string, large_string, string_view, binary, ...).
type varOf[S ~string | ~[]byte, A interface{ Value(int) S }] struct{ a A }

func (v varOf[S, A]) encodedLen(i int) int {
	s := v.a.Value(i)
	n := len(s) + 2
	for k := 0; k < len(s); k++ {
		if s[k] == 0 {
			n++
		}
	}
	return n
}

// put escapes 0x00 as 0x00 0xFF and terminates with 0x00 0x00. The
// terminator sorts below any continuation (0x00 0xFF or a byte > 0), so a
// value sorts before its extensions, and no encoding is a prefix of
// another — which is what lets DESC simply invert the bytes.
func (v varOf[S, A]) put(dst []byte, i int) int {
	s := v.a.Value(i)
	n := 0
	for k := 0; k < len(s); k++ {
		c := s[k]
		dst[n] = c
		n++
		if c == 0 {
			dst[n] = 0xFF
			n++
		}
	}
	dst[n], dst[n+1] = 0, 0
	return n + 2
}

func (v varOf[S, A]) prefix(i int) uint64 { return prefix8(v.a.Value(i)) }
