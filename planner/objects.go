package planner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/objectio"
)

// maxLoggedLocation bounds a location quoted in a log line: keys come from
// notifications anyone on the subject may publish.
const maxLoggedLocation = 512

func boundedLocation(s string) string {
	if len(s) <= maxLoggedLocation {
		return s
	}
	return s[:maxLoggedLocation] + "..."
}

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
	ObjectRefused     ObjectOutcome = "refused"       // a key not in canonical form: never tracked, never a candidate
	ObjectHeld        ObjectOutcome = "held"          // under a watched prefix, no table known yet: redelivered
	ObjectOutside     ObjectOutcome = "outside"       // under no watched table
	ObjectUntrackable ObjectOutcome = "tracking_full" // the table's tracking bound was reached
)

type unconfirmedFile struct {
	location string // canonical: the spelling a job stats and deletes by
	size     int64
	// created nominates the file: the notification's eventTime (never
	// later than its arrival). The executor judges the file's age from
	// the object store's LastModified and, when that is younger, the
	// planner moves created to it.
	created time.Time
}

// ApplyObject applies one bucket notification. A new metadata file under a
// table's metadata/ is a commit, whoever wrote it: the table is loaded and
// brought up to date exactly as a commit event would (and applied once, if
// both arrive). A new file under data/ is tracked until a snapshot
// references it; a removal drops it. Objects under no watched table return
// ErrOutsideTables; objects under a watched warehouse prefix that no table
// claims even after a refresh of the index return ErrUnclaimed (hold them).
func (p *Planner) ApplyObject(ctx context.Context, ev events.ObjectEvent) (ObjectOutcome, error) {
	r, out, err := p.RouteObject(ctx, ev)
	switch {
	case r.Table.IsZero():
		return out, err
	case !r.Metadata:
		return p.TrackObject(r, ev), nil
	case p.ObjectCovered(r, ev):
		return ObjectCommit, nil
	}
	tbl, err := p.Refresh(ctx, r.Table)
	return p.MetadataOutcome(r, ev, tbl, err)
}

// refuseObject handles a key not in canonical form: another spelling of
// some key, which a store may resolve to a live file, so it is never
// tracked (it could make that file an orphan candidate) and never held (no
// table location is spelled that way, so none will ever claim it). Under a
// table's location it is counted and logged; elsewhere it is just outside.
func (p *Planner) refuseObject(ev events.ObjectEvent, cause error) (ObjectOutcome, error) {
	if key := strings.TrimSuffix(ev.Key, "/"); key != ev.Key {
		if _, err := location.Canonical("s3://" + ev.Bucket + "/" + key); err == nil {
			return ObjectIgnored, nil // a directory marker
		}
	}
	tl, ok := p.locations.lookup(ev.Bucket, ev.Key)
	if !ok {
		_, watched := p.locations.underWatchedPrefix(ev.Bucket, ev.Key)
		if !watched {
			return ObjectOutside, fmt.Errorf("%w: %s", ErrOutsideTables, boundedLocation(ev.Location()))
		}
	}
	name := tl.table.String()
	if !ok {
		name = "-" // under a watched prefix, no table: counted all the same
	}
	p.met.OrphansRefused.WithLabelValues(name, "not_canonical").Inc()
	p.log.Warn("object key not in canonical form: not tracked, never an orphan candidate",
		"table", name, "location", boundedLocation(ev.Location()), "reason", "not_canonical", "detail", cause)
	return ObjectRefused, nil
}

// ErrNotYetVisible: a new metadata file whose commit the catalog does not
// show yet. Like ErrUnclaimed, the notification is held and redelivered
// (a failed commit's metadata file never becomes visible: it is dropped
// after the grace).
var ErrNotYetVisible = errors.New("metadata file not visible in the catalog yet")

// metadataVisible reports whether the catalog's table has reached the
// metadata file at loc: it is the current one, in the metadata log, or
// older by its version number (iceberg names metadata files
// NNNNN-uuid.metadata.json) than the current one. A name without a version
// counts as visible: nothing tells otherwise.
func metadataVisible(tbl *table.Table, loc string) bool {
	id := location.Identity(loc)
	if location.Identity(tbl.MetadataLocation()) == id {
		return true
	}
	for entry := range tbl.Metadata().PreviousFiles() {
		if location.Identity(entry.MetadataFile) == id {
			return true
		}
	}
	notified, ok := metadataVersion(loc)
	if !ok {
		return true
	}
	current, ok := metadataVersion(tbl.MetadataLocation())
	return ok && notified <= current
}

func metadataVersion(loc string) (int, bool) {
	name := loc[strings.LastIndexByte(loc, '/')+1:]
	num, _, ok := strings.Cut(name, "-")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(num)
	return v, err == nil && v >= 0
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
	return metadataCovered(st.counters.metadataLocation, loc)
}

// metadataCovered reports whether a state brought up to the metadata file
// applied (normalised) includes the commit that wrote the one at loc: it
// is that file, or an older one by its version number.
func metadataCovered(applied, loc string) bool {
	if applied == "" {
		return false
	}
	if location.Identity(loc) == applied {
		return true
	}
	notified, ok := metadataVersion(loc)
	if !ok {
		return false
	}
	current, ok := metadataVersion(applied)
	return ok && notified <= current && sameDirectory(applied, location.Identity(loc))
}

// sameDirectory reports whether two locations share their parent.
func sameDirectory(a, b string) bool {
	return a[:strings.LastIndexByte(a, '/')+1] == b[:strings.LastIndexByte(b, '/')+1]
}

func (p *Planner) trackData(tl tableLocation, ev events.ObjectEvent) ObjectOutcome {
	st := p.state(tl.table)
	st.mu.Lock()
	defer st.mu.Unlock()
	canonical, _ := location.Canonical(ev.Location()) // ApplyObject refused the others
	loc := location.Identity(canonical)
	switch ev.Action {
	case events.ObjectRemoved:
		delete(st.unconfirmed, loc)
		delete(st.orphans.dryRunReported, loc)
		st.removed.add(loc, ev.Time)
		return ObjectRemoved
	case events.ObjectCreated:
	default:
		return ObjectIgnored
	}
	if _, key, ok := objectPath(loc); ok && jobs.HiddenRelative(strings.TrimPrefix(key, tl.prefix)) {
		return ObjectIgnored // a .crc sidecar or _temporary file: never an orphan candidate
	}
	// Notifications can arrive out of order (versitygw publishes each from
	// its own goroutine): a creation no later than a removal already seen
	// is stale. A later one is a new object at the same key.
	if removedAt, ok := st.removed.get(loc); ok && !ev.Time.After(removedAt) {
		return ObjectIgnored
	}
	if st.counters.confirmed.has(locationHash(loc)) {
		return ObjectConfirmed
	}
	if _, ok := st.unconfirmed[loc]; !ok && len(st.unconfirmed) >= MaxUnconfirmedPerTable {
		if !st.trackingIncomplete {
			st.trackingIncomplete = true
			p.log.Warn("unconfirmed-file tracking full; orphan cleanup for this table will need a full listing",
				"table", tl.table.String(), "limit", MaxUnconfirmedPerTable)
		}
		return ObjectUntrackable
	}
	if st.unconfirmed == nil {
		st.unconfirmed = map[string]unconfirmedFile{}
	}
	// The producer writes eventTime: it only says when to look first. A
	// missing or future one is the arrival time.
	created := ev.Time
	if now := p.now(); created.IsZero() || created.After(now) {
		created = now
	}
	st.unconfirmed[loc] = unconfirmedFile{location: canonical, size: ev.Size, created: created}
	p.met.UnconfirmedFiles.WithLabelValues(tl.table.String()).Set(float64(len(st.unconfirmed)))
	// Wake when it would become an orphan candidate: nothing else may
	// happen on this table until then. (Before the table's first commit is
	// applied its settings are unknown; that evaluation arms the timer.)
	if st.counters.partitions != nil && st.running == nil && st.settings.OrphanMargin > 0 {
		p.wakeAtLocked(st, created.Add(st.settings.OrphanMargin))
	}
	return ObjectTracked
}

// deferOrphansLocked moves tracked files an orphan job found younger than
// the margin, by the object store's LastModified, to that time (the next
// evaluation arms the table's timer for when they come of age): a forged
// or early eventTime costs one look, not a job per cool-down.
func (p *Planner) deferOrphansLocked(st *tableState, deferred map[string]time.Time) {
	for loc, modified := range deferred {
		key := location.Identity(loc)
		f, ok := st.unconfirmed[key]
		if !ok || modified.IsZero() {
			continue
		}
		if modified.After(f.created) {
			f.created = modified
			st.unconfirmed[key] = f
		}
	}
}

// confirmLocked drops tracked files a newly applied snapshot references.
func (st *tableState) confirmLocked(paths []string) {
	if len(st.unconfirmed) == 0 {
		return
	}
	for _, path := range paths {
		delete(st.unconfirmed, location.Identity(path))
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
func (p *Planner) OrphanCandidates(ctx context.Context, name string, asOf time.Time) ([]jobs.OrphanCandidate, bool, error) {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	st.mu.Lock()
	ident := st.table.Ident()
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
	var out []jobs.OrphanCandidate
	for loc, f := range st.unconfirmed {
		if referenced[loc] {
			delete(st.unconfirmed, loc)
			continue
		}
		if f.created.Before(cutoff) {
			out = append(out, jobs.OrphanCandidate{Location: f.location, Size: f.size, Created: f.created})
		}
	}
	p.met.UnconfirmedFiles.WithLabelValues(name).Set(float64(len(st.unconfirmed)))
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, !st.trackingIncomplete, nil
}

// removals remembers when recently removed objects were removed, bounded
// to removalLimit entries (oldest forgotten first).
const removalLimit = 4096

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
		if len(r.order) > removalLimit {
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

// referencedLocations returns the normalised locations of every data and
// delete file referenced by any snapshot in tbl's history, DELETED entries
// included (a file a snapshot removed still counts as referenced here: the
// check only ever keeps a file from being a candidate). Manifests are
// shared between snapshots; each distinct one is read once.
func referencedLocations(ctx context.Context, tbl *table.Table) (map[string]bool, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	err = history.Walk(ctx, fs, tbl.Metadata().Snapshots(), history.WalkOptions{Deleted: true, Readers: objectio.ReadConcurrency(fs)}, func(f history.File) {
		if f.Kind != history.ManifestList && f.Kind != history.Manifest {
			out[location.Identity(f.Path)] = true
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
