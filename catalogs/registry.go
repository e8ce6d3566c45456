package catalogs

// The catalog types iceberg-go registers (catalog.Load finds them by the
// "type" property) that reactor links. The PostgreSQL driver the sql type
// needs is linked in jdbc.go; MySQL's and SQLite's come with iceberg-go
// and package embedded.
import (
	_ "github.com/apache/iceberg-go/catalog/glue"
	_ "github.com/apache/iceberg-go/catalog/hadoop"
	_ "github.com/apache/iceberg-go/catalog/hive"
	_ "github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/catalog/sql"
	// Registers s3://, s3a:// and s3n:// warehouses (aws-sdk-go-v2).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)
