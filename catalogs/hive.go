package catalogs

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hive"
)

// hiveClients is the property for the number of Metastore connections
// (Iceberg Java's HiveCatalog calls its pool size the same).
const hiveClients = "clients"

// defaultHiveClients: a job's commit holds one for its lock, alter and
// unlock; refreshes, discovery and pages share the rest.
const defaultHiveClients = 4

// openHive opens iceberg-go's hive catalog over reactor's connection pool
// and checks that the Metastore answers the calls it makes: Hive
// Metastore 4 lacks get_table, which is better said at start than at the
// first table load.
func openHive(ctx context.Context, timeout time.Duration, props iceberg.Properties) (catalog.Catalog, error) {
	u, err := url.Parse(props["uri"])
	if err != nil {
		return nil, configErrorf("the hive catalog's URI: %w", err)
	}
	port := u.Port()
	if port == "" {
		port = "9083"
	}
	size := defaultHiveClients
	if v := props[hiveClients]; v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 64 {
			return nil, configErrorf("the hive catalog's %s must be 1 to 64, got %q", hiveClients, v)
		}
	}
	pool := newHMSPool(net.JoinHostPort(u.Hostname(), port), size)
	_, err = bounded(ctx, timeout, "ask the Hive Metastore at "+pool.addr, func(ctx context.Context) (struct{}, error) {
		if _, err := pool.GetAllDatabases(ctx); err != nil {
			return struct{}{}, err
		}
		// A name no database has: Hive Metastore 3 answers
		// NoSuchObjectException, 4 that it does not know get_table.
		_, err := pool.GetTable(ctx, "reactor_version_probe", "reactor_version_probe")
		if errors.Is(err, ErrHiveMetastoreVersion) {
			return struct{}{}, configErrorf("%w", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		_ = pool.Close()
		return nil, err
	}
	return hive.NewCatalogWithClient(pool, props), nil
}
