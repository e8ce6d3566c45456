package catalogs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/redact"
)

// Open opens the catalog cfg selects and returns it wrapped for sharing,
// or the error that kept it from opening (the one-shot commands: a
// catalog that is down is an error at once). Configuration errors wrap
// ErrConfig.
func Open(ctx context.Context, cfg Config) (*Catalog, error) {
	c, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	inner, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	c.inner = inner
	return c, nil
}

// OpenWaiting is Open for reactor run: a catalog that is down at start is
// waited for. Only a configuration error is returned; otherwise the
// catalog is opened now if it answers, else in the background, retried with
// a growing pause (up to a minute). Until it opens every call fails with
// ErrNotOpen and the reason. Once open, a catalog that goes down fails its
// calls with its own errors until it is back (the Hive pool redials; the
// other clients reconnect by themselves).
func OpenWaiting(ctx context.Context, cfg Config) (*Catalog, error) {
	c, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	bgCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c.stop = stop
	inner, err := c.open(ctx)
	if err != nil {
		if errors.Is(err, ErrConfig) {
			stop()
			return nil, err
		}
		c.log.Warn("catalog not reachable; waiting for it (not ready until it answers)",
			"catalog", c.cfg.describe(), "error", redact.Error(err))
		c.notOpen = redact.Error(err)
		c.bg.Add(1)
		go c.openLater(bgCtx)
		return c, nil
	}
	c.inner = inner
	return c, nil
}

// prepare resolves cfg and applies the defaults.
func prepare(cfg Config) (*Catalog, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Catalog{cfg: cfg, log: cfg.Logger, notOpen: errors.New("not opened yet")}
	if cfg.MetadataCacheBytes > 0 {
		c.cache = newMetadataCache(cfg.MetadataCacheBytes)
	}
	// The cheap location serves the cache and the polling safety net.
	name, props := cfg.Name, map[string]string(cfg.Props)
	if props == nil {
		name = embedded.CatalogName
		if props, err = embedded.CatalogProperties(cfg.EmbeddedDir); err != nil {
			return nil, err
		}
	}
	if props["type"] == TypeSQL {
		l, err := newSQLLocator(name, props)
		if err != nil {
			return nil, err
		}
		if l != nil {
			c.locate = l
		}
	}
	return c, nil
}

// snapshotLoadingMode is the REST catalog property that lets a server
// leave historical snapshots out of a loaded table.
const snapshotLoadingMode = "snapshot-loading-mode"

// open opens the catalog under the wrappers its type needs.
func (c *Catalog) open(ctx context.Context) (catalog.Catalog, error) {
	cfg := c.cfg
	if cfg.Props == nil {
		cat, err := bounded(ctx, cfg.Timeout, "opening it", func(ctx context.Context) (catalog.Catalog, error) {
			return embedded.OpenCatalog(ctx, cfg.EmbeddedDir)
		})
		if err != nil {
			return nil, err
		}
		c.log.Info("opened embedded SQLite catalog", "dir", cfg.EmbeddedDir)
		return c.wrap(cat), nil
	}
	props := maps.Clone(cfg.Props)
	if props["type"] == TypeREST {
		// Every table load may feed a deletion decision: it must hold
		// every snapshot (docs/design.md#rule-own-table). A server whose
		// /v1/config forces "refs" anyway is caught per table (scope.Partial).
		if mode := props[snapshotLoadingMode]; mode != "" && mode != "all" {
			c.log.Warn("catalog property "+snapshotLoadingMode+" overridden: reactor loads every snapshot", "was", mode)
		}
		props[snapshotLoadingMode] = "all"
	}
	var cat catalog.Catalog
	var err error
	switch props["type"] {
	case TypeHive:
		cat, err = openHive(ctx, cfg.Timeout, props)
	case TypeHadoop:
		if !localScheme(warehouseScheme(props["warehouse"])) && cfg.ReadOnly {
			// The read-only wrapper refuses every commit; iceberg-go only
			// needs to be told it may open the warehouse.
			props[allowUnsafeCommits] = "true"
		}
		fallthrough
	case TypeREST:
		cat, err = bounded(ctx, cfg.Timeout, "opening it", func(ctx context.Context) (catalog.Catalog, error) {
			return openREST(ctx, cfg.Name, props, c.log, cfg.now)
		})
	default:
		cat, err = bounded(ctx, cfg.Timeout, "opening it", func(ctx context.Context) (catalog.Catalog, error) {
			return catalog.Load(ctx, cfg.Name, props)
		})
	}
	if err != nil {
		if errors.Is(err, ErrConfig) {
			return nil, err
		}
		err = authRefused(cfg.describe(), authSource(props), err)
		// A REST catalog's error quotes the URL it could not reach.
		return nil, fmt.Errorf("open %s: %w", cfg.describe(), redact.Error(err))
	}
	c.log.Info("opened catalog", "name", cfg.Name, "type", props["type"], "uri", redact.String(props["uri"]),
		"timeout", cfg.Timeout.String(), "read_only", cfg.ReadOnly)
	if why := s3TablesCatalog(props); why != "" {
		c.log.Info("Amazon S3 Tables catalog: compaction and the metadata jobs run on its tables; expiry deletes nothing and orphan cleanup is off (S3 removes unreferenced files itself)",
			"name", cfg.Name, "why", why)
	}
	return c.wrap(cat), nil
}

// wrap puts the type's wrappers around an opened catalog.
func (c *Catalog) wrap(cat catalog.Catalog) catalog.Catalog {
	props := c.cfg.Props
	if isType(props, TypeHive) || isType(props, TypeGlue) {
		cat = flatNamespaces{cat}
	}
	if isType(props, TypeHadoop) && !localScheme(warehouseScheme(props["warehouse"])) {
		cat = hadoopObjectStore{cat}
	}
	if c.cfg.ReadOnly {
		cat = readOnly{cat}
	}
	return cat
}

// openLater opens the catalog in the background, retrying with a pause
// that doubles from a second up to a minute, until it opens or ctx ends.
func (c *Catalog) openLater(ctx context.Context) {
	defer c.bg.Done()
	wait := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
		inner, err := c.open(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("catalog still not reachable; retrying", "catalog", c.cfg.describe(),
				"error", redact.Error(err), "retry_in", wait.String())
			c.mu.Lock()
			c.notOpen = redact.Error(err)
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			if cl, ok := inner.(catalog.Closer); ok {
				_ = cl.Close()
			}
			return
		}
		c.inner = inner
		c.log.Info("catalog reachable: opened", "catalog", c.cfg.describe())
		return
	}
}
