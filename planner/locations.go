package planner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// ErrOutsideTables: an object that lies under no watched table's location.
// Counted and ignored: buckets hold much more than Iceberg tables.
var ErrOutsideTables = errors.New("object outside every watched table")

// locationIndex maps object locations (bucket + key) to the table whose
// location contains them. It is built from the catalog for the watched
// namespaces and rebuilt when an object misses (rate-limited) or on a
// schedule, so created, dropped and relocated tables are picked up.
type locationIndex struct {
	mu         sync.Mutex
	byBucket   map[string][]tableLocation // longest prefix first
	builtAt    time.Time
	building   bool
	minRebuild time.Duration
}

type tableLocation struct {
	prefix string // key prefix inside the bucket, ending in "/"
	ident  table.Identifier
	name   string
}

// objectPath splits a location ("s3a://bucket/a/b") into bucket and key.
// Scheme aliases (s3, s3a, s3n, gs, abfs...) are ignored: only the
// authority and path identify an object, whatever client wrote the path.
func objectPath(location string) (bucket, key string, ok bool) {
	u, err := url.Parse(location)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), true
}

func (ix *locationIndex) lookup(bucket, key string) (tableLocation, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, tl := range ix.byBucket[bucket] {
		if strings.HasPrefix(key, tl.prefix) {
			return tl, true
		}
	}
	return tableLocation{}, false
}

// invalidate makes the next miss rebuild the index at once.
func (ix *locationIndex) invalidate() {
	ix.mu.Lock()
	ix.builtAt = time.Time{}
	ix.mu.Unlock()
}

func (ix *locationIndex) set(locs map[string][]tableLocation) {
	for _, l := range locs {
		sort.Slice(l, func(i, j int) bool { return len(l[i].prefix) > len(l[j].prefix) })
	}
	ix.mu.Lock()
	ix.byBucket = locs
	ix.mu.Unlock()
}

// RefreshLocations rebuilds the location index from the catalog: every
// table of every watched namespace (all namespaces when none is
// configured). It returns how many tables were indexed.
func (p *Planner) RefreshLocations(ctx context.Context) (int, error) {
	cfg := p.cfg.Load()
	var namespaces []table.Identifier
	if len(cfg.Namespaces) > 0 {
		for _, ns := range cfg.Namespaces {
			namespaces = append(namespaces, strings.Split(ns, "."))
		}
	} else {
		var err error
		if namespaces, err = listAllNamespaces(ctx, p.cat, nil); err != nil {
			return 0, fmt.Errorf("%w: list namespaces: %w", ErrCatalogUnavailable, err)
		}
	}
	locs := map[string][]tableLocation{}
	n := 0
	for _, ns := range namespaces {
		for ident, err := range p.cat.ListTables(ctx, ns) {
			if err != nil {
				if errors.Is(err, catalog.ErrNoSuchNamespace) {
					break
				}
				return n, fmt.Errorf("%w: list tables of %s: %w", ErrCatalogUnavailable, strings.Join(ns, "."), err)
			}
			tbl, err := p.cat.LoadTable(ctx, ident)
			if err != nil {
				if !errors.Is(err, catalog.ErrNoSuchTable) { // else dropped while listing
					p.log.Warn("table left out of the location index; its objects will be ignored until the next rebuild",
						"table", strings.Join(ident, "."), "error", err)
				}
				continue
			}
			bucket, key, ok := objectPath(tbl.Location())
			if !ok {
				continue // a local warehouse: no bucket notifications
			}
			locs[bucket] = append(locs[bucket], tableLocation{
				prefix: strings.TrimSuffix(key, "/") + "/",
				ident:  ident,
				name:   strings.Join(ident, "."),
			})
			n++
		}
	}
	p.locations.set(locs)
	p.locations.mu.Lock()
	p.locations.builtAt = p.now()
	p.locations.mu.Unlock()
	p.log.Info("table location index rebuilt", "tables", n, "buckets", len(locs))
	return n, nil
}

func listAllNamespaces(ctx context.Context, cat catalog.Catalog, parent table.Identifier) ([]table.Identifier, error) {
	children, err := cat.ListNamespaces(ctx, parent)
	if err != nil {
		return nil, err
	}
	out := append([]table.Identifier(nil), children...)
	for _, c := range children {
		if len(c) <= len(parent) {
			continue // catalogs that list only top levels
		}
		sub, err := listAllNamespaces(ctx, cat, c)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// locate finds the table an object belongs to, rebuilding the index once
// when it misses and the last rebuild is older than the minimum interval
// (a table created since). Misses are cheap after that.
func (p *Planner) locate(ctx context.Context, bucket, key string) (tableLocation, error) {
	if tl, ok := p.locations.lookup(bucket, key); ok {
		return tl, nil
	}
	p.locations.mu.Lock()
	stale := p.now().Sub(p.locations.builtAt) >= p.locations.minRebuild && !p.locations.building
	if stale {
		p.locations.building = true
	}
	p.locations.mu.Unlock()
	if stale {
		_, err := p.RefreshLocations(ctx)
		p.locations.mu.Lock()
		p.locations.building = false
		p.locations.mu.Unlock()
		if err != nil {
			return tableLocation{}, err
		}
		if tl, ok := p.locations.lookup(bucket, key); ok {
			return tl, nil
		}
	}
	return tableLocation{}, fmt.Errorf("%w: s3://%s/%s", ErrOutsideTables, bucket, key)
}

// Discover brings every table of the watched namespaces (all namespaces
// when none is configured) that the planner does not know yet into its
// state, as a commit event would. reactor run calls it once at start, so
// that what a table waits for outlives a restart even when nobody writes
// to it: expiry deadlines, the next orphan listing, and the files expiry
// unlinked before the restart. It returns how many tables it observed.
func (p *Planner) Discover(ctx context.Context) (int, error) {
	cfg := p.cfg.Load()
	var namespaces []table.Identifier
	if len(cfg.Namespaces) > 0 {
		for _, ns := range cfg.Namespaces {
			namespaces = append(namespaces, strings.Split(ns, "."))
		}
	} else {
		var err error
		if namespaces, err = listAllNamespaces(ctx, p.cat, nil); err != nil {
			return 0, fmt.Errorf("%w: list namespaces: %w", ErrCatalogUnavailable, err)
		}
	}
	n := 0
	for _, ns := range namespaces {
		for ident, err := range p.cat.ListTables(ctx, ns) {
			if err != nil {
				if errors.Is(err, catalog.ErrNoSuchNamespace) {
					break
				}
				return n, fmt.Errorf("%w: list tables of %s: %w", ErrCatalogUnavailable, strings.Join(ns, "."), err)
			}
			name := strings.Join(ident, ".")
			p.mu.Lock()
			_, known := p.tables[name]
			p.mu.Unlock()
			if known || !cfg.Watches(strings.Join(ident[:len(ident)-1], ".")) {
				continue
			}
			tbl, err := p.cat.LoadTable(ctx, ident)
			if err != nil {
				if ctx.Err() != nil {
					return n, ctx.Err()
				}
				if !errors.Is(err, catalog.ErrNoSuchTable) {
					p.log.Warn("table not discovered; its first event will bring it in", "table", name, "error", err)
				}
				continue
			}
			if err := p.Observe(ctx, tbl); err != nil {
				if ctx.Err() != nil {
					return n, ctx.Err()
				}
				p.log.Warn("table not discovered; its first event will bring it in", "table", name, "error", err)
				continue
			}
			n++
		}
	}
	return n, nil
}
