package sortorder

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// kind is how a column's values are read and encoded; it follows the
// Iceberg type, not the Arrow one, so keys built from batches whose Arrow
// types differ (int32 data in a long column, large_string vs string)
// still compare correctly with each other.
type kind uint8

const (
	kindBool    kind = iota + 1
	kindInt          // int: 4-byte key
	kindDate         // date: 4-byte key, arrow date32
	kindLong         // long: 8-byte key
	kindTime         // time: arrow time64[us]
	kindTsMicro      // timestamp, timestamptz: arrow timestamp[us]
	kindTsNano       // timestamp_ns, timestamptz_ns: arrow timestamp[ns]
	kindFloat        // float: 4-byte key
	kindDouble       // double: 8-byte key
	kindDecimal      // decimal(p, s): 16-byte key
	kindString       // string: escaped, variable length
	kindBinary       // binary: escaped, variable length
	kindFixed        // fixed[L]: L-byte key
	kindUUID         // uuid: 16-byte key
)

// supportedTypes is listed in errors about unsupported columns.
const supportedTypes = "boolean, int, long, float, double, decimal, date, time, timestamp, timestamptz, timestamp_ns, timestamptz_ns, string, binary, fixed, uuid"

// kindOf maps an Iceberg type to its kind (false if it cannot be sorted on).
func kindOf(t iceberg.Type) (k kind, width int, ok bool) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return kindBool, 1, true
	case iceberg.Int32Type:
		return kindInt, 4, true
	case iceberg.DateType:
		return kindDate, 4, true
	case iceberg.Int64Type:
		return kindLong, 8, true
	case iceberg.TimeType:
		return kindTime, 8, true
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return kindTsMicro, 8, true
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return kindTsNano, 8, true
	case iceberg.Float32Type:
		return kindFloat, 4, true
	case iceberg.Float64Type:
		return kindDouble, 8, true
	case iceberg.DecimalType:
		return kindDecimal, 16, true
	case *iceberg.DecimalType:
		return kindDecimal, 16, true
	case iceberg.StringType:
		return kindString, 0, true
	case iceberg.BinaryType:
		return kindBinary, 0, true
	case iceberg.FixedType:
		return kindFixed, t.Len(), true
	case *iceberg.FixedType:
		return kindFixed, t.Len(), true
	case iceberg.UUIDType:
		return kindUUID, 16, true
	}
	return 0, 0, false
}

// Bound is an Order checked against a table schema, ready to sort Arrow
// record batches of that schema. The zero Bound is unusable; get one from
// Order.Bind. A Bound is immutable and safe for concurrent use.
type Bound struct {
	order  Order
	cols   []boundCol
	stride int // linear key bytes per row if every column is fixed-width, else 0
	// spread[b] places bit k of byte b at bit k*n+n-1 of a 32-bit word
	// (n = number of z-order columns), so interleaving a byte position of
	// n columns is n lookups, shifts and ORs. Only for a z-order; built
	// once in Bind and never written again.
	spread *[256]uint32
}

type boundCol struct {
	name       string // the schema's spelling, which may differ in case from the order's
	id         int
	typ        iceberg.Type
	kind       kind
	width      int   // value bytes in a linear key; 0 for variable length
	scale      int32 // decimal scale, which Arrow decimals must match
	desc       bool
	nullsFirst bool
}

// Bind checks o against a table schema: every column exists (an error
// names the column and lists the schema's top-level column names), is
// top-level and primitive (a struct, list or map column is refused with its
// type named), and has a supported type. It returns a Bound usable on Arrow
// record batches of that schema.
//
// Names match top-level columns exactly, else case-insensitively if
// exactly one column matches that way (Spark's default). A z-order must
// have 2 to 4 distinct columns.
func (o Order) Bind(schema *iceberg.Schema) (Bound, error) {
	if schema == nil {
		return Bound{}, fmt.Errorf("%w %q: no schema to bind to", ErrInvalid, o.String())
	}
	if len(o.Fields) == 0 {
		return Bound{}, fmt.Errorf("%w: the order has no columns", ErrInvalid)
	}
	if o.ZOrder && (len(o.Fields) < minZOrderColumns || len(o.Fields) > maxZOrderColumns) {
		return Bound{}, fmt.Errorf("%w %q: zorder needs %d to %d columns, got %d", ErrInvalid, o.String(), minZOrderColumns, maxZOrderColumns, len(o.Fields))
	}
	fields := schema.Fields()
	b := Bound{order: Order{ZOrder: o.ZOrder, Fields: append([]Field(nil), o.Fields...)}}
	used := make(map[int]string, len(o.Fields))
	stride := 0
	for _, f := range o.Fields {
		nf, err := resolve(fields, schema, f.Column)
		if err != nil {
			return Bound{}, err
		}
		if prev, dup := used[nf.ID]; dup && o.ZOrder {
			// Harmless in a linear order (the later key never decides),
			// but a z-order would give one column twice the bits.
			return Bound{}, fmt.Errorf("%w %q: zorder names column %q twice (as %q and %q)", ErrInvalid, o.String(), nf.Name, prev, f.Column)
		}
		used[nf.ID] = f.Column
		if _, nested := nf.Type.(iceberg.NestedType); nested {
			return Bound{}, fmt.Errorf("%w: column %q has type %s; only primitive columns can be sorted on", ErrInvalid, nf.Name, nf.Type)
		}
		k, width, ok := kindOf(nf.Type)
		if !ok {
			return Bound{}, fmt.Errorf("%w: column %q has type %s, which cannot be sorted on (supported: %s)", ErrInvalid, nf.Name, nf.Type, supportedTypes)
		}
		c := boundCol{name: nf.Name, id: nf.ID, typ: nf.Type, kind: k, width: width, desc: f.Descending, nullsFirst: f.NullsFirst}
		if o.ZOrder {
			// Directions mean nothing in a z-order (nulls always come
			// first); clearing them keeps the Bound from suggesting otherwise.
			c.desc, c.nullsFirst = false, true
		}
		switch t := nf.Type.(type) {
		case iceberg.DecimalType:
			c.scale = int32(t.Scale())
		case *iceberg.DecimalType:
			c.scale = int32(t.Scale())
		}
		b.cols = append(b.cols, c)
		if width == 0 || stride < 0 {
			stride = -1
		} else {
			stride += 1 + width
		}
	}
	if stride > 0 {
		b.stride = stride
	}
	if o.ZOrder {
		b.spread = spreadTable(len(b.cols))
	}
	return b, nil
}

// resolve finds a top-level column: exactly by name, else by a unique
// case-insensitive match.
func resolve(fields []iceberg.NestedField, schema *iceberg.Schema, name string) (iceberg.NestedField, error) {
	var folded []iceberg.NestedField
	for _, f := range fields {
		if f.Name == name {
			return f, nil
		}
		if strings.EqualFold(f.Name, name) {
			folded = append(folded, f)
		}
	}
	switch len(folded) {
	case 1:
		return folded[0], nil
	case 0:
	default:
		names := make([]string, len(folded))
		for i, f := range folded {
			names[i] = f.Name
		}
		return iceberg.NestedField{}, fmt.Errorf("%w: column %q is ambiguous: it matches %s case-insensitively", ErrInvalid, name, strings.Join(names, ", "))
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	hint := ""
	if strings.Contains(name, ".") {
		if _, ok := schema.FindFieldByName(name); ok {
			hint = "; it is a nested field, and nested fields are not supported"
		}
	}
	return iceberg.NestedField{}, fmt.Errorf("%w: column %q is not in the table schema%s (top-level columns: %s)", ErrInvalid, name, hint, strings.Join(names, ", "))
}

// Order returns the order b was bound from.
func (b Bound) Order() Order {
	return Order{ZOrder: b.order.ZOrder, Fields: append([]Field(nil), b.order.Fields...)}
}

// Columns returns the bound columns' names as the schema spells them, in
// order.
func (b Bound) Columns() []string {
	out := make([]string, len(b.cols))
	for i, c := range b.cols {
		out[i] = c.name
	}
	return out
}

// FieldIDs returns the bound columns' Iceberg field ids, in order (for
// reading their statistics from manifests, say).
func (b Bound) FieldIDs() []int {
	out := make([]int, len(b.cols))
	for i, c := range b.cols {
		out[i] = c.id
	}
	return out
}
