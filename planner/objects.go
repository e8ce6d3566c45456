package planner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icereactor/reactor/events"
)

// MaxUnconfirmedPerTable bounds the files tracked per table while no
// snapshot references them yet. Each entry costs its path plus ~40 bytes;
// at the bound a table's tracking is marked incomplete (orphan cleanup must
// then list the bucket) and further files are not tracked.
const MaxUnconfirmedPerTable = 100_000

// ObjectOutcome says what ApplyObject did with an object event.
type ObjectOutcome string

// Object outcomes (the outcome label of reactor_objects_total).
const (
	ObjectCommit      ObjectOutcome = "commit"        // a new metadata file: the table was brought up to date
	ObjectTracked     ObjectOutcome = "tracked"       // a data file no snapshot references yet
	ObjectConfirmed   ObjectOutcome = "confirmed"     // a data file a snapshot already references
	ObjectRemoved     ObjectOutcome = "removed"       // a removal, dropped from tracking
	ObjectIgnored     ObjectOutcome = "ignored"       // other paths under a table (manifests, stats) and other actions
	ObjectOutside     ObjectOutcome = "outside"       // under no watched table
	ObjectUntrackable ObjectOutcome = "tracking_full" // the table's tracking bound was reached
)

type unconfirmedFile struct {
	size    int64
	created time.Time
}

// OrphanCandidate is a data file no snapshot has referenced for longer
// than the table's orphan margin.
type OrphanCandidate struct {
	Location string
	Size     int64
	Created  time.Time
}

// ApplyObject applies one bucket notification. A new metadata file under a
// table's metadata/ is a commit, whoever wrote it: the table is loaded and
// brought up to date exactly as a commit event would (and applied once, if
// both arrive). A new file under data/ is tracked until a snapshot
// references it; a removal drops it. Objects under no watched table return
// ErrOutsideTables.
func (p *Planner) ApplyObject(ctx context.Context, ev events.ObjectEvent) (ObjectOutcome, error) {
	tl, err := p.locate(ctx, ev.Bucket, ev.Key)
	if err != nil {
		if errors.Is(err, ErrOutsideTables) {
			return ObjectOutside, err
		}
		return "", err
	}
	rel := strings.TrimPrefix(ev.Key, tl.prefix)
	switch {
	case ev.Action == events.ObjectCreated && strings.HasPrefix(rel, "metadata/") && strings.HasSuffix(rel, ".metadata.json"):
		if p.metadataApplied(tl.name, ev.Location()) {
			return ObjectCommit, nil
		}
		p.commitObserved(tl.name)
		tbl, err := p.cat.LoadTable(ctx, tl.ident)
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			// Dropped (or renamed) since the index was built.
			p.locations.invalidate()
			return ObjectOutside, fmt.Errorf("%w: %s: table %s no longer exists", ErrOutsideTables, ev.Location(), tl.name)
		}
		if err != nil {
			return "", fmt.Errorf("%w: load %s for %s: %w", ErrCatalogUnavailable, tl.name, ev.Location(), err)
		}
		if err := p.Observe(ctx, tbl); err != nil {
			return "", err
		}
		return ObjectCommit, nil
	case strings.HasPrefix(rel, "data/"):
		return p.trackData(tl, ev), nil
	default:
		return ObjectIgnored, nil
	}
}

// metadataApplied reports whether the table's state already includes the
// metadata file at loc (the commit event came first, or a duplicate).
func (p *Planner) metadataApplied(name, loc string) bool {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.counters.appliedMetadata.has(normalizeLocation(loc))
}

func (p *Planner) trackData(tl tableLocation, ev events.ObjectEvent) ObjectOutcome {
	st := p.state(tl.ident, tl.name)
	st.mu.Lock()
	defer st.mu.Unlock()
	loc := normalizeLocation(ev.Location())
	switch ev.Action {
	case events.ObjectRemoved:
		delete(st.unconfirmed, loc)
		delete(st.dryRunReported, loc)
		st.removed.add(loc, ev.Time)
		return ObjectRemoved
	case events.ObjectCreated:
	default:
		return ObjectIgnored
	}
	if _, key, ok := objectPath(loc); ok && hiddenRelative(strings.TrimPrefix(key, tl.prefix)) {
		return ObjectIgnored // a .crc sidecar or _temporary file: never an orphan candidate
	}
	// Notifications can arrive out of order (versitygw publishes each from
	// its own goroutine): a creation no later than a removal already seen
	// is stale. A later one is a new object at the same key.
	if removedAt, ok := st.removed.get(loc); ok && !ev.Time.After(removedAt) {
		return ObjectIgnored
	}
	if st.counters.confirmed.has(loc) {
		return ObjectConfirmed
	}
	if _, ok := st.unconfirmed[loc]; !ok && len(st.unconfirmed) >= MaxUnconfirmedPerTable {
		if !st.trackingIncomplete {
			st.trackingIncomplete = true
			p.log.Warn("unconfirmed-file tracking full; orphan cleanup for this table will need a full listing",
				"table", tl.name, "limit", MaxUnconfirmedPerTable)
		}
		return ObjectUntrackable
	}
	if st.unconfirmed == nil {
		st.unconfirmed = map[string]unconfirmedFile{}
	}
	created := ev.Time
	if created.IsZero() {
		created = p.now()
	}
	st.unconfirmed[loc] = unconfirmedFile{size: ev.Size, created: created}
	p.met.UnconfirmedFiles.WithLabelValues(tl.name).Set(float64(len(st.unconfirmed)))
	// Wake when it would become an orphan candidate: nothing else may
	// happen on this table until then. (Before the table's first commit is
	// applied its settings are unknown; that evaluation arms the timer.)
	if st.counters.partitions != nil && st.running == nil && st.settings.OrphanMargin > 0 {
		p.wakeAtLocked(st, created.Add(st.settings.OrphanMargin))
	}
	return ObjectTracked
}

// confirmLocked drops tracked files a newly applied snapshot references.
func (st *tableState) confirmLocked(paths []string) {
	if len(st.unconfirmed) == 0 {
		return
	}
	for _, path := range paths {
		delete(st.unconfirmed, normalizeLocation(path))
	}
}

// OrphanCandidates lists the named table's tracked files that no snapshot
// references and that are older than its orphan margin as of asOf (now, or
// a later time to ask what will be a candidate by then), oldest first, and
// whether tracking is complete (false: files may be missing from the list,
// and only a full listing can find them).
//
// Before answering it checks the tracked files against every manifest of
// every snapshot still in the table's history (each distinct manifest read
// once): a notification can arrive after the commit that references its
// file was applied by a rebuild, and a file referenced by any snapshot is
// never a candidate.
func (p *Planner) OrphanCandidates(ctx context.Context, name string, asOf time.Time) ([]OrphanCandidate, bool, error) {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	st.mu.Lock()
	ident := st.ident
	st.mu.Unlock()
	tbl, err := p.cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, false, fmt.Errorf("%w: load %s: %w", ErrCatalogUnavailable, name, err)
	}
	referenced, err := referencedLocations(ctx, tbl)
	if err != nil {
		return nil, false, fmt.Errorf("%w: read history of %s: %w", ErrCatalogUnavailable, name, err)
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	margin := p.cfg.Load().For(name, tbl.Properties()).OrphanMargin
	cutoff := asOf.Add(-margin)
	var out []OrphanCandidate
	for loc, f := range st.unconfirmed {
		if referenced[loc] {
			delete(st.unconfirmed, loc)
			continue
		}
		if f.created.Before(cutoff) {
			out = append(out, OrphanCandidate{Location: loc, Size: f.size, Created: f.created})
		}
	}
	p.met.UnconfirmedFiles.WithLabelValues(name).Set(float64(len(st.unconfirmed)))
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, !st.trackingIncomplete, nil
}

// removals remembers when recently removed objects were removed, bounded
// to recentLimit entries (oldest forgotten first).
type removals struct {
	at    map[string]time.Time
	order []string
}

func (r *removals) add(loc string, at time.Time) {
	if r.at == nil {
		r.at = map[string]time.Time{}
	}
	if _, ok := r.at[loc]; !ok {
		r.order = append(r.order, loc)
		if len(r.order) > recentLimit {
			delete(r.at, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.at[loc] = at
}

func (r *removals) get(loc string) (time.Time, bool) {
	t, ok := r.at[loc]
	return t, ok
}
