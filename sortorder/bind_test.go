package sortorder

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// mixedSchema has primitive, nested and unsupported columns.
func mixedSchema() *iceberg.Schema {
	return iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "Name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 10, Name: "x", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 4, Name: "l", Type: &iceberg.ListType{ElementID: 11, Element: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 5, Name: "m", Type: &iceberg.MapType{KeyID: 12, KeyType: iceberg.PrimitiveTypes.String, ValueID: 13, ValueType: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 6, Name: "v", Type: iceberg.VariantType{}},
		iceberg.NestedField{ID: 7, Name: "dup", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 8, Name: "DUP", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 9, Name: "a.b", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 14, Name: "u", Type: iceberg.PrimitiveTypes.Unknown},
	)
}

func TestBindErrors(t *testing.T) {
	sc := mixedSchema()
	const cols = "(top-level columns: id, Name, s, l, m, v, dup, DUP, a.b, u)"
	tests := []struct {
		order Order
		want  string
	}{
		{Order{Fields: []Field{asc("nope")}}, `column "nope" is not in the table schema ` + cols},
		{Order{Fields: []Field{asc("id"), desc("missing")}}, `column "missing" is not in the table schema ` + cols},
		{Order{Fields: []Field{asc("s.x")}}, `column "s.x" is not in the table schema; it is a nested field, and nested fields are not supported ` + cols},
		{Order{Fields: []Field{asc("s")}}, `column "s" has type struct<10: x: optional int>; only primitive columns can be sorted on`},
		{Order{Fields: []Field{asc("l")}}, `column "l" has type list<int>; only primitive columns can be sorted on`},
		{Order{Fields: []Field{asc("m")}}, `column "m" has type map<string, int>; only primitive columns can be sorted on`},
		{Order{Fields: []Field{asc("v")}}, `column "v" has type variant, which cannot be sorted on (supported: boolean, int, long, float, double, decimal, date, time, timestamp, timestamptz, timestamp_ns, timestamptz_ns, string, binary, fixed, uuid)`},
		{Order{Fields: []Field{asc("u")}}, `column "u" has type unknown, which cannot be sorted on`},
		{Order{Fields: []Field{asc("Dup")}}, `column "Dup" is ambiguous: it matches dup, DUP case-insensitively`},
		{Order{}, "the order has no columns"},
		{Order{ZOrder: true, Fields: []Field{asc("id")}}, "zorder needs 2 to 4 columns, got 1"},
		{Order{ZOrder: true, Fields: []Field{asc("id"), asc("dup"), asc("DUP"), asc("Name"), asc("a.b")}}, "zorder needs 2 to 4 columns, got 5"},
		{Order{ZOrder: true, Fields: []Field{asc("id"), asc("ID")}}, `zorder names column "id" twice (as "id" and "ID")`},
	}
	for _, tt := range tests {
		t.Run(tt.order.String(), func(t *testing.T) {
			b, err := tt.order.Bind(sc)
			if err == nil {
				t.Fatalf("Bind(%s) = %v, want an error containing %q", tt.order, b.Columns(), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Bind(%s) error %q, want it to contain %q", tt.order, err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Bind(%s) error %q does not wrap ErrInvalid", tt.order, err)
			}
		})
	}
	if _, err := (Order{Fields: []Field{asc("id")}}).Bind(nil); err == nil {
		t.Error("Bind(nil schema) succeeded")
	}
}

// A z-order of one or five columns is refused already by Parse, with the
// count in the message.
func TestZOrderColumnCountAtParse(t *testing.T) {
	for in, want := range map[string]string{
		"zorder(id)":                    "zorder needs 2 to 4 columns, got 1",
		"zorder(id, Name, dup, DUP, u)": "zorder needs 2 to 4 columns, got 5",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error %v, want %q", in, err, want)
		}
	}
}

func TestBindResolves(t *testing.T) {
	sc := mixedSchema()
	tests := []struct {
		in      string
		columns []string
		ids     []int
	}{
		{"id", []string{"id"}, []int{1}},
		{"ID DESC, name", []string{"id", "Name"}, []int{1, 2}}, // case-insensitive when unique
		{"dup, DUP", []string{"dup", "DUP"}, []int{7, 8}},      // exact match wins
		{"`a.b`", []string{"a.b"}, []int{9}},                   // a top-level name with a dot
		{"id, Id", []string{"id", "id"}, []int{1, 1}},          // harmless in a linear order
		{"zorder(id, Name, dup, `a.b`)", []string{"id", "Name", "dup", "a.b"}, []int{1, 2, 7, 9}},
	}
	for _, tt := range tests {
		o, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		b, err := o.Bind(sc)
		if err != nil {
			t.Fatalf("Bind(%q): %v", tt.in, err)
		}
		if got := b.Columns(); !reflect.DeepEqual(got, tt.columns) {
			t.Errorf("Bind(%q).Columns() = %q, want %q", tt.in, got, tt.columns)
		}
		if got := b.FieldIDs(); !reflect.DeepEqual(got, tt.ids) {
			t.Errorf("Bind(%q).FieldIDs() = %v, want %v", tt.in, got, tt.ids)
		}
		if got := b.Order(); !reflect.DeepEqual(got, o) {
			t.Errorf("Bind(%q).Order() = %v, want %v", tt.in, got, o)
		}
	}
}

// Every supported type binds, linear and in a z-order.
func TestBindSupportedTypes(t *testing.T) {
	sc := allTypesSchema()
	for _, c := range sortableColumns(sc) {
		f, _ := sc.FindFieldByName(c)
		for _, o := range []Order{
			{Fields: []Field{desc(c)}},
			{ZOrder: true, Fields: []Field{asc(c), asc("rowid")}},
		} {
			if _, err := o.Bind(sc); err != nil {
				t.Errorf("%s column: Bind(%s): %v", f.Type, o, err)
			}
		}
	}
}

func TestFromTable(t *testing.T) {
	sc := mixedSchema()
	field := func(id int, tr iceberg.Transform, dir table.SortDirection, nulls table.NullOrder) table.SortField {
		return table.SortField{SourceIDs: []int{id}, Transform: tr, Direction: dir, NullOrder: nulls}
	}
	identity := iceberg.IdentityTransform{}
	tests := []struct {
		name   string
		fields []table.SortField
		want   Order
		err    string
	}{
		{"identity", []table.SortField{
			field(1, identity, table.SortASC, table.NullsFirst),
			field(2, identity, table.SortDESC, table.NullsLast),
			field(7, identity, table.SortASC, table.NullsLast),
			field(9, identity, table.SortDESC, table.NullsFirst),
		}, Order{Fields: []Field{asc("id"), desc("Name"), {Column: "dup"}, {Column: "a.b", Descending: true, NullsFirst: true}}}, ""},
		{"bucket", []table.SortField{
			field(1, identity, table.SortASC, table.NullsFirst),
			field(2, iceberg.BucketTransform{NumBuckets: 4}, table.SortASC, table.NullsFirst),
		}, Order{}, "sort field 1 (bucket[4](Name) ASC NULLS FIRST) uses transform bucket[4]; only identity transforms (plain columns) are supported"},
		{"truncate", []table.SortField{field(2, iceberg.TruncateTransform{Width: 3}, table.SortDESC, table.NullsLast)},
			Order{}, "sort field 0 (truncate[3](Name) DESC NULLS LAST) uses transform truncate[3]"},
		{"nested", []table.SortField{field(10, identity, table.SortASC, table.NullsFirst)},
			Order{}, `sort field 0 (s.x ASC NULLS FIRST) is on nested field "s.x"; nested fields are not supported`},
		{"missing", []table.SortField{field(99, identity, table.SortASC, table.NullsFirst)},
			Order{}, "sort field 0 refers to field id 99, which is not in the schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			so, err := table.NewSortOrder(1, tt.fields)
			if err != nil {
				t.Fatal(err)
			}
			got, err := FromTable(so, sc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("FromTable error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("FromTable = %#v, want %#v", got, tt.want)
			}
			// What FromTable returns binds to the same schema.
			if _, err := got.Bind(sc); err != nil {
				t.Fatalf("Bind(%s): %v", got, err)
			}
		})
	}
	if _, err := FromTable(table.UnsortedSortOrder, sc); err == nil || !strings.Contains(err.Error(), "the table has no default sort order") {
		t.Errorf("FromTable(unsorted) error %v", err)
	}
}
