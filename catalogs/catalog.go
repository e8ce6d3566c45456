package catalogs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/tablename"
)

// ErrNotOpen marks a call to a catalog OpenWaiting has not been able to
// open yet; the error says why (the last attempt's error).
var ErrNotOpen = errors.New("catalog not reachable yet")

// Catalog is the catalog every part of reactor shares: each call bounded
// by the catalog timeout, tables that commit through it, and (from
// OpenWaiting) opened in the background while the catalog is down (its
// calls say why meanwhile; the worker's readiness probe reports that). It is
// safe for concurrent use when the catalog under it is: every type reactor
// links is, the Hive one through reactor's connection pool.
type Catalog struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex
	// inner is the opened catalog with its wrappers (nil until open).
	inner catalog.Catalog
	// notOpen is why inner is nil: the last attempt's error.
	notOpen error
	closed  bool

	// stop ends the background opening; bg waits for it.
	stop context.CancelFunc
	bg   sync.WaitGroup

	// The metadata cache (metadata_cache.go): parsed metadata by location,
	// the cheap location lookup of catalogs that have one (nil: none), and
	// each table's IO for the tables it hands out from memory.
	cache  *metadataCache
	locate locator
	ios    tableIO

	calls callCounts
}

var _ catalog.Catalog = (*Catalog)(nil)

// Config is the resolved configuration the catalog was opened with.
func (c *Catalog) Config() Config { return c.cfg }

// current is the open catalog, or ErrNotOpen with the reason.
func (c *Catalog) current() (catalog.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		return nil, fmt.Errorf("%w (%s): %w", ErrNotOpen, c.cfg.describe(), c.notOpen)
	}
	return c.inner, nil
}

// call runs one catalog call on the open catalog within the timeout.
func call[T any](ctx context.Context, c *Catalog, op string, f func(context.Context, catalog.Catalog) (T, error)) (T, error) {
	inner, err := c.current()
	if err != nil {
		var zero T
		return zero, err
	}
	c.calls.count(op)
	v, err := bounded(ctx, c.cfg.Timeout, op, func(ctx context.Context) (T, error) { return f(ctx, inner) })
	if err != nil {
		err = authRefused(c.cfg.describe(), authSource(c.cfg.Props), err)
	}
	return v, err
}

// do is call for calls that return only an error.
func do(ctx context.Context, c *Catalog, op string, f func(context.Context, catalog.Catalog) error) error {
	_, err := call(ctx, c, op, func(ctx context.Context, cat catalog.Catalog) (struct{}, error) {
		return struct{}{}, f(ctx, cat)
	})
	return err
}

// own hands out a table that commits through c (its transactions call the
// catalog the table was loaded from).
func (c *Catalog) own(tbl *table.Table, err error) (*table.Table, error) {
	if err != nil || tbl == nil {
		return tbl, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

// CatalogType is the configured type ("sql" for the embedded catalog).
func (c *Catalog) CatalogType() catalog.Type {
	if c.cfg.Props == nil {
		return catalog.SQL
	}
	return catalog.Type(c.cfg.Props["type"])
}

func (c *Catalog) CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	return c.own(call(ctx, c, "create table "+formatIdent(ident), func(ctx context.Context, cat catalog.Catalog) (*table.Table, error) {
		return cat.CreateTable(ctx, ident, sc, opts...)
	}))
}

// commitResult carries CommitTable's two results through call.
type commitResult struct {
	meta table.Metadata
	loc  string
}

func (c *Catalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	r, err := call(ctx, c, "commit to "+formatIdent(ident), func(ctx context.Context, cat catalog.Catalog) (commitResult, error) {
		meta, loc, err := cat.CommitTable(ctx, ident, reqs, updates)
		return commitResult{meta, loc}, err
	})
	if err == nil && c.cache != nil {
		// The table a commit returns is the next load's: never parsed.
		c.cache.put(formatIdent(ident), r.loc, r.meta)
	}
	return r.meta, r.loc, err
}

// ListTables bounds each step of the listing by the timeout, not the
// whole: a Hive database of thousands of tables takes a call per table.
func (c *Catalog) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {
		inner, err := c.current()
		if err != nil {
			yield(nil, err)
			return
		}
		c.calls.count(CallList)
		lctx, clock, stop := newProgressDeadline(ctx, c.cfg.Timeout)
		defer stop()
		for ident, err := range inner.ListTables(lctx, ns) {
			clock.pause()
			if err != nil && lctx.Err() != nil {
				err = timeoutError(lctx, "list tables of "+formatIdent(ns), c.cfg.Timeout, err)
			}
			if !yield(ident, err) {
				return
			}
			clock.resume()
		}
	}
}

// LoadTable loads the table; a metadata file this process parsed before
// is answered from memory when the catalog can say cheaply which file is
// current (metadata_cache.go).
func (c *Catalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	if tbl, err, ok := c.fromCache(ctx, ident); ok {
		return tbl, err
	}
	tbl, err := c.own(call(ctx, c, "load "+formatIdent(ident), func(ctx context.Context, cat catalog.Catalog) (*table.Table, error) {
		return cat.LoadTable(ctx, ident)
	}))
	if err == nil && c.cache != nil {
		c.cache.put(formatIdent(ident), tbl.MetadataLocation(), tbl.Metadata())
		c.ios.put(tbl)
	}
	if err == nil && c.locate != nil {
		// The polling safety net's cheap location needs it too, cache or not.
		c.locate.learn(ctx, ident, tbl.MetadataLocation())
	}
	return tbl, err
}

// fromCache answers a load from the metadata cache; ok is false when it
// cannot (no cheap location, a file not parsed before, a table whose IO is
// not known), and the load must be made in full.
func (c *Catalog) fromCache(ctx context.Context, ident table.Identifier) (*table.Table, error, bool) {
	if c.locate == nil || c.cache == nil {
		return nil, nil, false
	}
	if _, err := c.current(); err != nil {
		return nil, err, true
	}
	c.calls.count(CallLocate)
	loc, err := bounded(ctx, c.cfg.Timeout, "locate "+formatIdent(ident), func(ctx context.Context) (string, error) {
		return c.locate.locate(ctx, ident)
	})
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		return nil, err, true
	case err != nil:
		return nil, nil, false
	}
	fs, ok := c.ios.get(ident, loc)
	if !ok {
		return nil, nil, false
	}
	meta := c.cache.get(formatIdent(ident), loc)
	if meta == nil {
		return nil, nil, false
	}
	return table.New(ident, meta, loc, fs, c), nil, true
}

// ErrNoCheapLocation: the catalog cannot say a table's current metadata
// location without loading the table (or has not loaded it once yet).
var ErrNoCheapLocation = errors.New("no cheap way to read the current metadata location")

// MetadataLocation is the table's current metadata file as the catalog
// names it, read without loading the table where the catalog allows
// (the SQL catalog: one row), else ErrNoCheapLocation. The polling safety
// net compares it with what the planner applied.
func (c *Catalog) MetadataLocation(ctx context.Context, ident table.Identifier) (string, error) {
	if c.locate == nil {
		return "", ErrNoCheapLocation
	}
	if _, err := c.current(); err != nil {
		return "", err
	}
	c.calls.count(CallLocate)
	loc, err := bounded(ctx, c.cfg.Timeout, "locate "+formatIdent(ident), func(ctx context.Context) (string, error) {
		return c.locate.locate(ctx, ident)
	})
	if errors.Is(err, errUnlocated) {
		return "", ErrNoCheapLocation
	}
	return loc, err
}

// CacheStats says how many loads the metadata cache answered and how many
// parsed (zero without a cache).
func (c *Catalog) CacheStats() CacheStats {
	if c.cache == nil {
		return CacheStats{}
	}
	return CacheStats{Hits: c.cache.hits.Load(), Misses: c.cache.misses.Load()}
}

func (c *Catalog) DropTable(ctx context.Context, ident table.Identifier) error {
	return do(ctx, c, "drop "+formatIdent(ident), func(ctx context.Context, cat catalog.Catalog) error {
		return cat.DropTable(ctx, ident)
	})
}

func (c *Catalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	return c.own(call(ctx, c, "rename "+formatIdent(from), func(ctx context.Context, cat catalog.Catalog) (*table.Table, error) {
		return cat.RenameTable(ctx, from, to)
	}))
}

func (c *Catalog) CheckTableExists(ctx context.Context, ident table.Identifier) (bool, error) {
	return call(ctx, c, "check "+formatIdent(ident), func(ctx context.Context, cat catalog.Catalog) (bool, error) {
		return cat.CheckTableExists(ctx, ident)
	})
}

func (c *Catalog) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	return call(ctx, c, "list namespaces", func(ctx context.Context, cat catalog.Catalog) ([]table.Identifier, error) {
		return cat.ListNamespaces(ctx, parent)
	})
}

func (c *Catalog) CreateNamespace(ctx context.Context, ns table.Identifier, props iceberg.Properties) error {
	return do(ctx, c, "create namespace "+formatIdent(ns), func(ctx context.Context, cat catalog.Catalog) error {
		return cat.CreateNamespace(ctx, ns, props)
	})
}

func (c *Catalog) DropNamespace(ctx context.Context, ns table.Identifier) error {
	return do(ctx, c, "drop namespace "+formatIdent(ns), func(ctx context.Context, cat catalog.Catalog) error {
		return cat.DropNamespace(ctx, ns)
	})
}

func (c *Catalog) CheckNamespaceExists(ctx context.Context, ns table.Identifier) (bool, error) {
	return call(ctx, c, "check namespace "+formatIdent(ns), func(ctx context.Context, cat catalog.Catalog) (bool, error) {
		return cat.CheckNamespaceExists(ctx, ns)
	})
}

func (c *Catalog) LoadNamespaceProperties(ctx context.Context, ns table.Identifier) (iceberg.Properties, error) {
	return call(ctx, c, "load namespace "+formatIdent(ns), func(ctx context.Context, cat catalog.Catalog) (iceberg.Properties, error) {
		return cat.LoadNamespaceProperties(ctx, ns)
	})
}

func (c *Catalog) UpdateNamespaceProperties(ctx context.Context, ns table.Identifier, removals []string, updates iceberg.Properties) (catalog.PropertiesUpdateSummary, error) {
	return call(ctx, c, "update namespace "+formatIdent(ns), func(ctx context.Context, cat catalog.Catalog) (catalog.PropertiesUpdateSummary, error) {
		return cat.UpdateNamespaceProperties(ctx, ns, removals, updates)
	})
}

// Close stops the background opening and closes the catalog
// (its connections). Calls after Close fail.
func (c *Catalog) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	stop := c.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.bg.Wait()
	c.mu.Lock()
	inner := c.inner
	c.inner = nil
	c.notOpen = errors.New("closed")
	c.mu.Unlock()
	if c.locate != nil {
		_ = c.locate.close()
	}
	if cl, ok := inner.(catalog.Closer); ok {
		return redact.Error(cl.Close())
	}
	return nil
}

// formatIdent is a table or namespace name for messages.
func formatIdent(ident table.Identifier) string {
	if len(ident) == 0 {
		return "the catalog root"
	}
	return tablename.Format(ident)
}
