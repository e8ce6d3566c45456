package catalogs

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// flatNamespaces serves a catalog with one level of namespaces (Hive's
// databases, Glue's): listing a database's children answers none, where
// iceberg-go answers "hierarchical namespace is not supported" and
// reactor's discovery and location index, which walk the namespace tree,
// would fail on every pass.
type flatNamespaces struct{ catalog.Catalog }

func (f flatNamespaces) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	switch len(parent) {
	case 0:
		return f.Catalog.ListNamespaces(ctx, parent)
	case 1:
		return []table.Identifier{}, nil
	}
	return nil, fmt.Errorf("%w: %s (a %s catalog has one level of namespaces)", catalog.ErrNoSuchNamespace,
		formatIdent(parent), f.Catalog.CatalogType())
}
