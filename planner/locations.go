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

	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/tablename"
)

// ErrOutsideTables: an object that lies under no watched table's location.
// Counted and ignored: buckets hold much more than Iceberg tables.
var ErrOutsideTables = errors.New("object outside every watched table")

// ErrUnclaimed: an object no known table claims that lies under a watched
// warehouse prefix, so it may belong to a table the catalog does not list
// yet (created since the index was built, or still being created). The
// index was refreshed for it (or just had been); the consumer holds the
// notification and redelivers it until a table claims it or a grace
// passes.
var ErrUnclaimed = errors.New("object under a watched warehouse prefix claimed by no table yet")

// DefaultMissRefreshInterval is the least time between two index refreshes
// triggered by unclaimed objects under a watched prefix; refreshes asked
// for meanwhile share the one in flight or wait for the next.
const DefaultMissRefreshInterval = 500 * time.Millisecond

// locationIndex maps object locations (bucket + key) to the table whose
// location contains them. It is built from the catalog for the watched
// namespaces and rebuilt on a schedule; an object no table claims triggers
// a refresh at once when it lies under a watched warehouse prefix (at most
// every missInterval, coalesced), else a full rebuild at most every
// minRebuild. So created, dropped and relocated tables are picked up.
type locationIndex struct {
	mu       sync.Mutex
	byBucket map[string][]tableLocation // longest prefix first
	// configured are the warehouse prefixes from the options (the
	// catalog's warehouse, --watch-prefix) and namespaces the namespaces'
	// own location properties; watched is their union with the parent of
	// every known table's location, by bucket (key prefixes ending in "/",
	// "" for a whole bucket).
	configured     []string
	namespaces     []string
	namespaceNames []string // the namespaces listed by the last refresh
	watched        map[string][]string
	builtAt        time.Time
	building       bool
	minRebuild     time.Duration

	missInterval  time.Duration
	missRefreshAt time.Time     // when the last miss-triggered refresh started
	missInflight  chan struct{} // closed when the refresh in flight ends
}

type tableLocation struct {
	bucket string
	prefix string // key prefix inside the bucket, ending in "/"
	table  tablename.Name
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
	defer ix.mu.Unlock()
	ix.byBucket = locs
	watched := map[string][]string{}
	watch := func(loc string) {
		if bucket, key, ok := objectPath(loc); ok {
			// A location at the bucket's root (s3://warehouse/, a REST
			// catalog's usual warehouse) watches every key: "", not "/".
			prefix := strings.Trim(key, "/")
			if prefix != "" {
				prefix += "/"
			}
			watched[bucket] = append(watched[bucket], prefix)
		} else if u, err := url.Parse(loc); err == nil && u.Host != "" {
			watched[u.Host] = append(watched[u.Host], "") // a whole bucket
		}
	}
	for _, loc := range ix.configured {
		watch(loc)
	}
	for _, loc := range ix.namespaces {
		watch(loc)
	}
	for bucket, tables := range locs {
		for _, tl := range tables {
			// The parent of a table's location: where a catalog puts the
			// namespace's next table (warehouse/ns.db/ for iceberg-go's
			// SQL catalog, Hive and Spark).
			parent := ""
			if i := strings.LastIndex(strings.TrimSuffix(tl.prefix, "/"), "/"); i >= 0 {
				parent = tl.prefix[:i+1]
			}
			watched[bucket] = append(watched[bucket], parent)
		}
	}
	ix.watched = watched
}

// underWatchedPrefix reports the watched prefix the object lies under.
func (ix *locationIndex) underWatchedPrefix(bucket, key string) (string, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, prefix := range ix.watched[bucket] {
		if strings.HasPrefix(key, prefix) {
			return "s3://" + bucket + "/" + prefix, true
		}
	}
	return "", false
}

// RefreshLocations rebuilds the location index from the catalog: every
// table of every watched namespace (all namespaces when none is
// configured), each loaded for its location, and the namespaces' location
// properties. It returns how many tables were indexed.
func (p *Planner) RefreshLocations(ctx context.Context) (int, error) {
	return p.refreshLocations(ctx, true)
}

// refreshLocations lists the watched namespaces' tables. A full refresh
// loads every table for its location; otherwise only the tables the index
// does not know yet are loaded (the others keep their location) and known
// namespaces' properties are not read again: what a table created a moment
// ago needs, at the cost of a listing.
func (p *Planner) refreshLocations(ctx context.Context, full bool) (int, error) {
	known := map[string]tableLocation{}
	knownNamespaces := map[string]bool{}
	if !full {
		p.locations.mu.Lock()
		for _, tables := range p.locations.byBucket {
			for _, tl := range tables {
				known[tl.table.String()] = tl
			}
		}
		for _, ns := range p.locations.namespaceNames {
			knownNamespaces[ns] = true
		}
		p.locations.mu.Unlock()
	}
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
	var nsLocations, nsNames []string
	var roots []scope.Roots
	for _, ns := range namespaces {
		name := strings.Join(ns, ".")
		nsNames = append(nsNames, name)
		if full || !knownNamespaces[name] {
			if props, err := p.cat.LoadNamespaceProperties(ctx, ns); err == nil {
				if loc := props["location"]; loc != "" {
					nsLocations = append(nsLocations, loc)
				}
			}
		}
		for ident, err := range p.cat.ListTables(ctx, ns) {
			if err != nil {
				if errors.Is(err, catalog.ErrNoSuchNamespace) {
					break
				}
				return n, fmt.Errorf("%w: list tables of %s: %w", ErrCatalogUnavailable, strings.Join(ns, "."), err)
			}
			if tl, ok := known[tablename.Format(ident)]; ok {
				locs[tl.bucket] = append(locs[tl.bucket], tl)
				n++
				continue
			}
			tbl, err := p.cat.LoadTable(ctx, ident)
			if err != nil {
				if errors.Is(err, catalog.ErrNoSuchTable) { // dropped while listing
					continue
				}
				if ctx.Err() != nil {
					return n, ctx.Err()
				}
				p.log.Warn("table left out of the location index; its objects will be ignored until the next rebuild",
					"table", tablename.Format(ident), "error", err)
				if p.known != nil {
					// The deletion rule keeps what it knew of the table:
					// forgetting it could let a table around it delete
					// its files.
					if r, ok := p.known.Get(tablename.Format(ident)); ok {
						roots = append(roots, r)
					}
				}
				continue
			}
			roots = append(roots, scope.RootsOf(tablename.Format(ident), tbl.Metadata()))
			bucket, key, ok := objectPath(tbl.Location())
			if !ok {
				continue // a local warehouse: no bucket notifications
			}
			locs[bucket] = append(locs[bucket], tableLocation{
				bucket: bucket,
				prefix: strings.TrimSuffix(key, "/") + "/",
				table:  tablename.Of(ident),
			})
			n++
		}
	}
	p.locations.mu.Lock()
	if full {
		p.locations.namespaces = nsLocations
	} else {
		p.locations.namespaces = append(p.locations.namespaces, nsLocations...)
	}
	p.locations.namespaceNames = nsNames
	p.locations.mu.Unlock()
	p.locations.set(locs)
	p.locations.mu.Lock()
	if full {
		p.locations.builtAt = p.now()
	}
	p.locations.mu.Unlock()
	if p.known != nil {
		if full {
			p.known.Replace(roots)
		} else {
			for _, r := range roots {
				p.known.Set(r)
			}
		}
	}
	if full {
		p.log.Info("table location index rebuilt", "tables", n, "buckets", len(locs))
	} else {
		p.log.Debug("table location index refreshed for an unclaimed object", "tables", n, "buckets", len(locs))
	}
	return n, nil
}

func listAllNamespaces(ctx context.Context, cat catalog.Catalog, parent table.Identifier) ([]table.Identifier, error) {
	return scope.ListAllNamespaces(ctx, cat, parent)
}

// locate finds the table an object belongs to. An object no known table
// claims that lies under a watched warehouse prefix gets a refresh of the
// index at once (coalesced, at most every missInterval) and, if still
// unclaimed, ErrUnclaimed: the caller holds it. Any other miss rebuilds the
// index once when the last rebuild is older than the minimum interval, and
// is ErrOutsideTables; misses are cheap after that.
func (p *Planner) locate(ctx context.Context, bucket, key string) (tableLocation, error) {
	if tl, ok := p.locations.lookup(bucket, key); ok {
		return tl, nil
	}
	if prefix, ok := p.locations.underWatchedPrefix(bucket, key); ok {
		if err := p.refreshForMiss(ctx, bucket, key); err != nil {
			return tableLocation{}, err
		}
		if tl, ok := p.locations.lookup(bucket, key); ok {
			return tl, nil
		}
		return tableLocation{}, fmt.Errorf("%w: %s (under %s)", ErrUnclaimed,
			boundedLocation("s3://"+bucket+"/"+key), boundedLocation(prefix))
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
		if prefix, ok := p.locations.underWatchedPrefix(bucket, key); ok {
			return tableLocation{}, fmt.Errorf("%w: %s (under %s)", ErrUnclaimed,
				boundedLocation("s3://"+bucket+"/"+key), boundedLocation(prefix))
		}
	}
	return tableLocation{}, fmt.Errorf("%w: %s", ErrOutsideTables, boundedLocation("s3://"+bucket+"/"+key))
}

// refreshForMiss refreshes the index for an unclaimed object: it waits for
// a refresh in flight, and starts one unless one started since the object
// arrived (its answer is current) or one started less than missInterval
// ago (the object is held and asks again when redelivered).
func (p *Planner) refreshForMiss(ctx context.Context, bucket, key string) error {
	ix := &p.locations
	arrived := p.now()
	for {
		if _, ok := ix.lookup(bucket, key); ok {
			return nil
		}
		ix.mu.Lock()
		if ch := ix.missInflight; ch != nil {
			ix.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		now := p.now()
		if !ix.missRefreshAt.Before(arrived) || now.Sub(ix.missRefreshAt) < ix.missInterval {
			ix.mu.Unlock()
			return nil
		}
		ch := make(chan struct{})
		ix.missInflight, ix.missRefreshAt = ch, now
		ix.mu.Unlock()
		_, err := p.refreshLocations(ctx, false)
		ix.mu.Lock()
		ix.missInflight = nil
		close(ch)
		ix.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// Discover brings every table of the watched namespaces (all namespaces
// when none is configured) that the planner does not know yet, and that
// this replica owns, into its state, as a commit event would. reactor run calls it once at start, so
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
			name := tablename.Format(ident)
			p.mu.Lock()
			_, known := p.tables[name]
			p.mu.Unlock()
			if known || !cfg.Watches(strings.Join(ident[:len(ident)-1], ".")) || !p.ownsTable(name) {
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
