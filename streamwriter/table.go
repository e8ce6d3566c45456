package streamwriter

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Schema is the demo table's schema: a unique id, the partition column and
// a payload that makes each row a realistic ~100 bytes.
func Schema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "category", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "payload", Type: iceberg.PrimitiveTypes.String},
	)
}

// CreateTable creates the namespace (if missing) and a format-v2 table
// partitioned by identity(category). props are added to the table
// properties (for example write.target-file-size-bytes).
func CreateTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, props iceberg.Properties) (*table.Table, error) {
	return CreateTableAt(ctx, cat, ident, props, "")
}

// CreateTableAt is CreateTable at location (empty: where the catalog puts
// it).
func CreateTableAt(ctx context.Context, cat catalog.Catalog, ident table.Identifier, props iceberg.Properties, location string) (*table.Table, error) {
	if len(ident) < 2 {
		return nil, fmt.Errorf("streamwriter: table identifier %v needs a namespace", ident)
	}
	ns := catalog.NamespaceFromIdent(ident)
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("streamwriter: create namespace %v: %w", ns, err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "category",
	})
	all := iceberg.Properties{table.PropertyFormatVersion: "2"}
	for k, v := range props {
		all[k] = v
	}
	opts := []catalog.CreateTableOpt{catalog.WithPartitionSpec(&spec), catalog.WithProperties(all)}
	if location != "" {
		opts = append(opts, catalog.WithLocation(location))
	}
	tbl, err := cat.CreateTable(ctx, ident, Schema(), opts...)
	if err != nil {
		return nil, fmt.Errorf("streamwriter: create table %v: %w", ident, err)
	}
	return tbl, nil
}
