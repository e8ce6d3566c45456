package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/scope"
)

// Reasons an orphan candidate is refused: never deleted, counted in
// reactor_orphans_refused_total and logged.
const (
	RefusedNotCanonical   = "not_canonical"          // the location is not its canonical spelling
	RefusedOutsideData    = "outside_data_location"  // a tracked candidate not under the table's data location
	RefusedOutsideTable   = "outside_table_location" // a listed file not under the table's location
	RefusedHidden         = "hidden"                 // a tracked candidate that is a hidden file (.crc, _temporary)
	RefusedStatFailed     = "stat_failed"            // the object store could not say what the object is
	RefusedNotAFile       = "not_a_file"             // the key names a directory or a prefix
	RefusedNoLastModified = "no_last_modified"       // the object store reports no modification time
	RefusedNoStat         = "stat_unsupported"       // the table's IO cannot stat
)

// referenceMaxAge caps how old the reference check behind a delete may be.
// Before each delete the table's history is re-read from the catalog
// unless the last re-read ended less than it took (and less than this)
// ago. Any re-read is already as stale as it took when it returns, so the
// check behind a delete is at most about twice a load old, and re-reading
// costs at most about half of the job: loading a table costs what parsing
// its metadata file costs (212 ms at 10,100 snapshots, BENCHMARKS.md
// section 6), and a re-read before every one of a thousand deletes made a
// cleanup 20-25 times slower than its dry run at 300 snapshots
// (BenchmarkOrphanDeletion).
const referenceMaxAge = time.Second

// refusalsLogged bounds the per-job warnings about refused candidates; the
// rest go to debug, and the job's summary line counts them all.
const refusalsLogged = 20

// maxLoggedLocation bounds a location quoted in a log line or report:
// tracked locations come from notifications anyone may publish.
const maxLoggedLocation = 512

// verdict is what the guard decided about one candidate.
type verdict int

const (
	verdictOrphan     verdict = iota // unreferenced and older than the margin, by the store's clock
	verdictReferenced                // some snapshot, metadata file or statistics file references it
	verdictGone                      // the object no longer exists
	verdictYoung                     // the store says it is younger than the margin
	verdictHidden                    // a hidden file of the listing: not an orphan, silently
	verdictRefused                   // see the reason
	verdictRule                      // the deletion rule refused it (counted and logged by the rule)
	verdictOtherTable                // a listed file another known table claims: silently not a candidate
)

// judgement is the guard's answer for one candidate.
type judgement struct {
	verdict   verdict
	canonical string    // the spelling to delete by (verdictOrphan)
	size      int64     // as the store reports it
	modified  time.Time // the store's LastModified (verdictOrphan, verdictYoung)
	reason    string    // verdictRefused
	detail    string    // verdictRefused: why, for the log
	final     bool      // verdictRefused: asking again will not change the answer
}

// deletionGuard decides, immediately before each deletion and from the
// object store's own facts, whether a candidate may be deleted: its
// location must be canonical and under the job's scope, the store must
// report a regular file whose LastModified is older than the margin, and
// no snapshot, metadata file or statistics file in the table's history —
// re-read from the catalog right before the delete — may reference it.
// Whatever a notification claimed (its key, its eventTime) only nominated
// the candidate.
type deletionGuard struct {
	e         *Executor
	job       jobs.Job
	tableDir  string // canonical table location
	scope     string // canonical directory candidates must lie under
	outside   string // the refusal reason for a candidate outside scope
	hiddenRef string // the table location HiddenPath is relative to
	stat      iceio.StatIO
	fs        iceio.IO
	margin    time.Duration
	refs      *references
	refused   int
	// rc is the deletion rule for the table (reclaim.go).
	rc *reclaim
}

// newDeletionGuard prepares the guard for tbl. dataScope selects the
// table's data location as the scope (tracked candidates); otherwise the
// whole table location (a listing, which also finds metadata orphans).
func (e *Executor) newDeletionGuard(ctx context.Context, tbl *table.Table, rc *reclaim, loadedAt time.Time, loadCost time.Duration,
	job jobs.Job, dataScope bool) (*deletionGuard, error) {
	margin := max(job.Settings.OrphanMargin, job.Settings.OrphanMarginFloor)
	if margin <= 0 {
		return nil, errors.New("orphan cleanup without an orphan margin: refusing to delete anything")
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open table io: %w", err)
	}
	tableDir, err := location.Dir(tbl.Location())
	if err != nil {
		return nil, fmt.Errorf("table location: %w (orphan cleanup needs a canonical table location)", err)
	}
	g := &deletionGuard{e: e, job: job, tableDir: tableDir, scope: tableDir, outside: RefusedOutsideTable,
		hiddenRef: tbl.Location(), fs: fs, margin: margin, rc: rc}
	if dataScope {
		data := tbl.Location() + "/data"
		if p := tbl.Properties()[table.WriteDataPathKey]; p != "" {
			data = p
		}
		if g.scope, err = location.Dir(data); err != nil {
			return nil, fmt.Errorf("table data location: %w", err)
		}
		g.outside = RefusedOutsideData
	}
	g.stat, _ = fs.(iceio.StatIO)
	// Files waiting in the table's pending-deletion list belong to the
	// deletion pass (which checks them against the history again when
	// due): orphan cleanup never deletes them.
	pending, err := e.pendingLocations(fs, tbl)
	if err != nil {
		return nil, fmt.Errorf("read pending deletions: %w", err)
	}
	if g.refs, err = e.readReferences(ctx, fs, tbl, loadedAt, loadCost); err != nil {
		return nil, fmt.Errorf("read table history: %w", err)
	}
	for id := range pending {
		g.refs.ids[id] = true
	}
	return g, nil
}

// judge decides about the candidate at loc. With deleting set it re-reads
// the table's history from the catalog after the stat (unless the last
// re-read is more recent than referenceMaxAge allows), so the answer holds
// for a delete made right after it; an error means that re-read failed.
func (g *deletionGuard) judge(ctx context.Context, loc string, deleting bool) (judgement, error) {
	canonical, err := location.Canonical(loc)
	if err != nil {
		return judgement{verdict: verdictRefused, reason: RefusedNotCanonical, detail: err.Error(), final: true}, nil
	}
	if !location.Under(canonical, g.scope) {
		return judgement{verdict: verdictRefused, reason: g.outside, final: true,
			detail: "not under " + g.scope}, nil
	}
	if jobs.HiddenPath(g.hiddenRef, canonical) {
		if g.outside == RefusedOutsideTable {
			return judgement{verdict: verdictHidden}, nil
		}
		return judgement{verdict: verdictRefused, reason: RefusedHidden, final: true,
			detail: "a hidden file (.crc sidecar, _temporary, _SUCCESS) belongs to its writer"}, nil
	}
	if _, refusal := g.rc.check.Allow(canonical); refusal != nil {
		if refusal.Rule == scope.OtherTable && g.outside == RefusedOutsideTable {
			return judgement{verdict: verdictOtherTable}, nil
		}
		g.rc.refuse(refusal)
		return judgement{verdict: verdictRule}, nil
	}
	id := location.Identity(canonical)
	if g.refs.has(id) {
		return judgement{verdict: verdictReferenced}, nil
	}
	if g.stat == nil {
		return judgement{verdict: verdictRefused, reason: RefusedNoStat, final: true,
			detail: fmt.Sprintf("%T cannot stat, so the object's age is unknown", g.fs)}, nil
	}
	info, err := g.stat.Stat(canonical)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return judgement{verdict: verdictGone}, nil
	case err != nil:
		return judgement{verdict: verdictRefused, reason: RefusedStatFailed, detail: err.Error()}, nil
	case info.IsDir() || !info.Mode().IsRegular() && info.Mode()&iofs.ModeIrregular == 0:
		return judgement{verdict: verdictRefused, reason: RefusedNotAFile, final: true,
			detail: "the key names a directory or prefix, not an object"}, nil
	case info.ModTime().IsZero():
		return judgement{verdict: verdictRefused, reason: RefusedNoLastModified, final: true,
			detail: "the object store reported no LastModified, so the object's age is unknown"}, nil
	}
	j := judgement{canonical: canonical, size: info.Size(), modified: info.ModTime()}
	if time.Since(info.ModTime()) < g.margin {
		j.verdict = verdictYoung
		return j, nil
	}
	if deleting && time.Since(g.refs.readAt) >= min(g.refs.readCost, g.e.referenceMaxAge) {
		if err := g.refs.refresh(ctx, g.e, g.job.Table.Ident()); err != nil {
			return judgement{}, fmt.Errorf("re-read table history before deleting %s: %w", canonical, err)
		}
		if g.refs.has(id) {
			return judgement{verdict: verdictReferenced}, nil
		}
	}
	j.verdict = verdictOrphan
	return j, nil
}

// refuse counts and logs a refused candidate and records it in the report.
func (g *deletionGuard) refuse(log *slog.Logger, or *OrphanReport, loc string, j judgement) {
	g.e.met.OrphansRefused.WithLabelValues(g.job.Table.String(), j.reason).Inc()
	shown := bounded(loc)
	level := slog.LevelWarn
	if g.refused >= refusalsLogged {
		level = slog.LevelDebug
	}
	g.refused++
	log.Log(context.Background(), level, "orphan candidate refused: not deleted", "source", or.Source,
		"location", shown, "reason", j.reason, "detail", bounded(j.detail))
	or.RefusedFiles++
	if len(or.Refused) < maxReportedRefusals {
		or.Refused = append(or.Refused, RefusedFile{Location: shown, Reason: j.reason})
	}
}

func bounded(s string) string {
	if len(s) <= maxLoggedLocation {
		return s
	}
	return s[:maxLoggedLocation] + "..."
}

// references are the identities of every location a table's history
// references, and what was read to find them, so a refresh reads only
// what the commits since added. With a history index the index counts the
// snapshots' files and ids holds the metadata's own (metadata files,
// statistics) and the pending deletions; without, ids holds everything.
type references struct {
	readAt           time.Time     // when the last load from the catalog returned
	readCost         time.Duration // how long it took
	ids              map[string]bool
	manifests        map[string]bool
	snapshots        map[int64]bool
	metadataLocation string
	// index, borrowed from hist for the table named name (nil without).
	index *history.Index
	hist  *histories
	name  string
}

// readReferences reads what tbl's history references; tbl was loaded
// from the catalog at loadedAt, which took loadCost.
func (e *Executor) readReferences(ctx context.Context, fs iceio.IO, tbl *table.Table, loadedAt time.Time, loadCost time.Duration) (*references, error) {
	r := &references{readAt: loadedAt, readCost: loadCost, ids: map[string]bool{}, manifests: map[string]bool{}, snapshots: map[int64]bool{},
		hist: e.hist, name: tableName(tbl)}
	if err := r.add(ctx, fs, tbl); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// has reports whether the location with identity id is referenced.
func (r *references) has(id string) bool {
	return r.ids[id] || (r.index != nil && r.index.Referenced(id))
}

// close gives the borrowed index back.
func (r *references) close() {
	if r.index != nil {
		r.hist.giveBack(r.name, r.index)
		r.index = nil
	}
}

// refresh reloads the table from the catalog and adds what its history
// references now (commits since the last read: new snapshots, metadata
// files, statistics). References are only ever added: a file referenced
// once during the job is never deleted by it.
func (r *references) refresh(ctx context.Context, e *Executor, ident table.Identifier) error {
	asked := time.Now()
	tbl, err := e.cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("load table: %w", err)
	}
	r.readCost = time.Since(asked)
	if tbl.MetadataLocation() != r.metadataLocation {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return fmt.Errorf("open table io: %w", err)
		}
		if err := r.add(ctx, fs, tbl); err != nil {
			return err
		}
	}
	r.readAt = time.Now()
	return nil
}

func (r *references) add(ctx context.Context, fs iceio.IO, tbl *table.Table) error {
	meta := tbl.Metadata()
	r.metadataLocation = tbl.MetadataLocation()
	metadataRefs(r.ids, tbl)
	if r.hist != nil {
		if r.index == nil {
			x, _, err := r.hist.borrow(ctx, r.name, fs, meta, history.SyncOptions{AddOnly: true, Readers: storeConcurrency(fs)})
			if err != nil {
				return err
			}
			r.index = x
			return nil
		}
		// Add only: snapshots expired since the job started keep their
		// files referenced until it ends.
		if _, err := r.index.Sync(ctx, fs, meta, history.SyncOptions{AddOnly: true, Readers: storeConcurrency(fs)}); err != nil {
			return fmt.Errorf("read table history: %w", err)
		}
		return nil
	}
	var snaps []table.Snapshot
	for _, snap := range meta.Snapshots() {
		if !r.snapshots[snap.SnapshotID] {
			snaps = append(snaps, snap)
		}
	}
	// The manifests read by an earlier add are known; DELETED entries are
	// left out (referenced by an older snapshot, if any).
	if err := history.Walk(ctx, fs, snaps, history.WalkOptions{SkipManifest: func(path string) bool { return r.manifests[path] }, Readers: storeConcurrency(fs)},
		func(f history.File) {
			r.ids[location.Identity(f.Path)] = true
			if f.Kind == history.Manifest {
				r.manifests[f.Path] = true
			}
		}); err != nil {
		return err
	}
	for _, snap := range snaps {
		r.snapshots[snap.SnapshotID] = true
	}
	return nil
}
