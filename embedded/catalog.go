package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// CatalogName is the name the embedded catalog registers under.
const CatalogName = "reactor"

// CatalogProperties are the iceberg-go catalog properties of a SQL catalog on
// SQLite at dir/catalog.db with its warehouse at dir/warehouse. The same
// properties can be given to catalog.Load by any other process to share it.
func CatalogProperties(dir string) (iceberg.Properties, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded catalog: %w", err)
	}
	return iceberg.Properties{
		"type": "sql",
		// WAL lets readers proceed beside a writer; the busy timeout makes
		// a second writer (reactor beside a streaming writer) wait for the
		// lock; immediate transactions take the write lock up front, so a
		// read transaction never has to upgrade, which is where SQLITE_BUSY
		// slips past the busy timeout.
		"uri": "file://" + CatalogFile(abs) +
			"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate",
		sqlcat.DriverKey:      sqliteshim.ShimName,
		sqlcat.DialectKey:     string(sqlcat.SQLite),
		"warehouse":           "file://" + filepath.Join(abs, "warehouse"),
		"init_catalog_tables": "true",
	}, nil
}

// CatalogFile is the SQLite database of the embedded catalog under dir:
// it exists once OpenCatalog has created the catalog there.
func CatalogFile(dir string) string { return filepath.Join(dir, "catalog.db") }

// OpenCatalog opens (creating if needed) the SQLite catalog under dir.
func OpenCatalog(ctx context.Context, dir string) (catalog.Catalog, error) {
	props, err := CatalogProperties(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "warehouse"), 0o755); err != nil {
		return nil, fmt.Errorf("embedded catalog: %w", err)
	}
	cat, err := catalog.Load(ctx, CatalogName, props)
	if err != nil {
		return nil, fmt.Errorf("embedded catalog: open %s: %w", props["uri"], err)
	}
	return cat, nil
}
