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
	// Registers s3://, s3a://, s3n:// (aws-sdk-go-v2), gs:// and
	// abfs(s)://, wasb(s):// warehouses: objectio's FileIOs, each on its
	// store's client.
	_ "github.com/icereactor/reactor/objectio"
)
