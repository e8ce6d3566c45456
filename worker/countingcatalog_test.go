package worker

import (
	"context"
	"errors"
	"iter"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// countingCatalog wraps a real catalog and counts every call, by method;
// with down set, every call fails as an unreachable catalog's would.
type countingCatalog struct {
	catalog.Catalog
	mu    sync.Mutex
	calls map[string]int
	// loads counts LoadTable calls by table name.
	loads map[string]int
	down  atomic.Bool
	// hang, when set, holds every LoadTable until it is closed (or the
	// call's context ends): a catalog that does not answer.
	hang atomic.Pointer[chan struct{}]
}

var errCatalogDown = errors.New("dial tcp 10.0.0.9:8181: connect: connection refused")

func countCalls(c catalog.Catalog) *countingCatalog {
	return &countingCatalog{Catalog: c, calls: map[string]int{}, loads: map[string]int{}}
}

func (c *countingCatalog) count(method string) error {
	c.mu.Lock()
	c.calls[method]++
	c.mu.Unlock()
	if c.down.Load() {
		return errCatalogDown
	}
	return nil
}

// total is the number of calls so far, and by method.
func (c *countingCatalog) total() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, by := 0, map[string]int{}
	for m, k := range c.calls {
		n += k
		by[m] = k
	}
	return n, by
}

func (c *countingCatalog) Close() error {
	if cl, ok := c.Catalog.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

func (c *countingCatalog) CreateTable(ctx context.Context, id table.Identifier, s *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	if err := c.count("CreateTable"); err != nil {
		return nil, err
	}
	return c.Catalog.CreateTable(ctx, id, s, opts...)
}

func (c *countingCatalog) CommitTable(ctx context.Context, id table.Identifier, r []table.Requirement, u []table.Update) (table.Metadata, string, error) {
	if err := c.count("CommitTable"); err != nil {
		return nil, "", err
	}
	return c.Catalog.CommitTable(ctx, id, r, u)
}

func (c *countingCatalog) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	if err := c.count("ListTables"); err != nil {
		return func(yield func(table.Identifier, error) bool) { yield(nil, err) }
	}
	return c.Catalog.ListTables(ctx, ns)
}

func (c *countingCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	c.mu.Lock()
	c.loads[strings.Join(id, ".")]++
	c.mu.Unlock()
	if err := c.count("LoadTable"); err != nil {
		return nil, err
	}
	if h := c.hang.Load(); h != nil {
		select {
		case <-*h:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Catalog.LoadTable(ctx, id)
}

// loadsOf is the LoadTable calls for each table so far.
func (c *countingCatalog) loadsOf() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.loads)
}

func (c *countingCatalog) DropTable(ctx context.Context, id table.Identifier) error {
	if err := c.count("DropTable"); err != nil {
		return err
	}
	return c.Catalog.DropTable(ctx, id)
}

func (c *countingCatalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	if err := c.count("RenameTable"); err != nil {
		return nil, err
	}
	return c.Catalog.RenameTable(ctx, from, to)
}

func (c *countingCatalog) CheckTableExists(ctx context.Context, id table.Identifier) (bool, error) {
	if err := c.count("CheckTableExists"); err != nil {
		return false, err
	}
	return c.Catalog.CheckTableExists(ctx, id)
}

func (c *countingCatalog) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	if err := c.count("ListNamespaces"); err != nil {
		return nil, err
	}
	return c.Catalog.ListNamespaces(ctx, parent)
}

func (c *countingCatalog) CreateNamespace(ctx context.Context, ns table.Identifier, props iceberg.Properties) error {
	if err := c.count("CreateNamespace"); err != nil {
		return err
	}
	return c.Catalog.CreateNamespace(ctx, ns, props)
}

func (c *countingCatalog) DropNamespace(ctx context.Context, ns table.Identifier) error {
	if err := c.count("DropNamespace"); err != nil {
		return err
	}
	return c.Catalog.DropNamespace(ctx, ns)
}

func (c *countingCatalog) CheckNamespaceExists(ctx context.Context, ns table.Identifier) (bool, error) {
	if err := c.count("CheckNamespaceExists"); err != nil {
		return false, err
	}
	return c.Catalog.CheckNamespaceExists(ctx, ns)
}

func (c *countingCatalog) LoadNamespaceProperties(ctx context.Context, ns table.Identifier) (iceberg.Properties, error) {
	if err := c.count("LoadNamespaceProperties"); err != nil {
		return nil, err
	}
	return c.Catalog.LoadNamespaceProperties(ctx, ns)
}

func (c *countingCatalog) UpdateNamespaceProperties(ctx context.Context, ns table.Identifier, removals []string, updates iceberg.Properties) (catalog.PropertiesUpdateSummary, error) {
	if err := c.count("UpdateNamespaceProperties"); err != nil {
		return catalog.PropertiesUpdateSummary{}, err
	}
	return c.Catalog.UpdateNamespaceProperties(ctx, ns, removals, updates)
}
