package worker

// The catalog, and the tables found in it.

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"
)

// warehousePrefixes are the configured prefixes plus the catalog's
// warehouse property when it names an object-store location (a REST
// catalog's warehouse is often a name, not a location: then only the
// configured prefixes, the namespaces' locations and the parents of known
// tables are watched).
func warehousePrefixes(cfg Config) []string {
	out := slices.Clone(cfg.WarehousePrefixes)
	if wh := cfg.Catalog.Props["warehouse"]; wh != "" {
		if u, err := url.Parse(wh); err == nil && u.Host != "" && !strings.EqualFold(u.Scheme, "file") {
			out = append(out, wh)
		}
	}
	return out
}

// refreshLocations rebuilds the table-location index on a schedule, so
// tables created, dropped or relocated are noticed even when no object
// misses.
func (w *Worker) refreshLocations(ctx context.Context, every time.Duration) {
	defer w.bg.Done()
	for {
		wait := every
		if !w.known.IsReady() {
			// Deletions wait for a first full index: retry it soon.
			wait = min(every, registryRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
			if _, err := w.Planner.RefreshLocations(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("table location index refresh failed; keeping the previous one", "error", err)
			}
		}
	}
}

// registryRetry is how soon a location index refresh is tried again while
// none has succeeded yet.
const registryRetry = 10 * time.Second

// discover brings the catalog's tables this replica owns into the planner
// at start and after every lease acquisition, in the background, retrying
// while the catalog is unreachable: a table that nobody writes to still
// has deadlines (expiry, orphan listing) and files waiting for deletion,
// and after a restart or a handover no event would bring it in.
func (w *Worker) discover(ctx context.Context) {
	defer w.bg.Done()
	select {
	case <-w.connected:
	case <-ctx.Done():
		return
	}
	for {
		start := time.Now()
		for wait := time.Second; ; wait = min(2*wait, time.Minute) {
			n, err := w.Planner.Discover(ctx)
			if err == nil {
				w.log.Info("tables discovered", "tables", n, "duration", time.Since(start).Round(time.Millisecond))
				// A discovered table near a threshold gets its fast lane
				// now, not at its first event behind the backlog.
				if _, commits, _ := w.link(); commits != nil {
					commits.FollowHot(w.Planner.Tables())
				}
				break
			}
			if ctx.Err() != nil {
				return
			}
			w.log.Warn("table discovery failed; retrying", "error", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		select {
		case <-w.discoverAgain:
		case <-ctx.Done():
			return
		}
	}
}
