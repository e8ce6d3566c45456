package sortorder

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// FromTable converts a table's Iceberg sort order (identity transforms over
// top-level columns of schema) to an Order. Other transforms, multi-column
// transforms and nested source columns are an error naming the field; an
// unsorted order is an error ("the table has no default sort order").
//
// A table order is always linear: Iceberg has no z-order sort order.
func FromTable(so table.SortOrder, schema *iceberg.Schema) (Order, error) {
	if schema == nil {
		return Order{}, fmt.Errorf("%w: no schema to resolve the table's sort order against", ErrInvalid)
	}
	if so.Len() == 0 {
		return Order{}, fmt.Errorf("%w: the table has no default sort order", ErrInvalid)
	}
	top := make(map[int]string, schema.NumFields())
	for _, f := range schema.Fields() {
		top[f.ID] = f.Name
	}
	var o Order
	for i, sf := range so.Fields() {
		desc := fieldDescription(sf, schema)
		if len(sf.SourceIDs) != 1 {
			return Order{}, fmt.Errorf("%w: sort field %d (%s) takes %d source columns; only identity transforms of one column are supported",
				ErrInvalid, i, desc, len(sf.SourceIDs))
		}
		switch sf.Transform.(type) {
		case iceberg.IdentityTransform, *iceberg.IdentityTransform:
		default:
			return Order{}, fmt.Errorf("%w: sort field %d (%s) uses transform %v; only identity transforms (plain columns) are supported",
				ErrInvalid, i, desc, sf.Transform)
		}
		id := sf.SourceID()
		name, ok := top[id]
		if !ok {
			if full, nested := schema.FindColumnName(id); nested {
				return Order{}, fmt.Errorf("%w: sort field %d (%s) is on nested field %q; nested fields are not supported", ErrInvalid, i, desc, full)
			}
			return Order{}, fmt.Errorf("%w: sort field %d refers to field id %d, which is not in the schema", ErrInvalid, i, id)
		}
		o.Fields = append(o.Fields, Field{
			Column:     name,
			Descending: sf.Direction == table.SortDESC,
			NullsFirst: sf.NullOrder == table.NullsFirst,
		})
	}
	return o, nil
}

// fieldDescription renders a sort field with its column's name rather than
// its id, which is what a reader of the error knows the table by.
func fieldDescription(sf table.SortField, schema *iceberg.Schema) string {
	col := fmt.Sprint(sf.SourceIDs)
	if len(sf.SourceIDs) == 1 {
		col = fmt.Sprintf("field id %d", sf.SourceID())
		if name, ok := schema.FindColumnName(sf.SourceID()); ok {
			col = name
		}
	}
	dir := "ASC"
	if sf.Direction == table.SortDESC {
		dir = "DESC"
	}
	nulls := "NULLS LAST"
	if sf.NullOrder == table.NullsFirst {
		nulls = "NULLS FIRST"
	}
	if _, ok := sf.Transform.(iceberg.IdentityTransform); ok || sf.Transform == nil {
		return fmt.Sprintf("%s %s %s", col, dir, nulls)
	}
	return fmt.Sprintf("%v(%s) %s %s", sf.Transform, col, dir, nulls)
}
