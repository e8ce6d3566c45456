package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"sort"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/planner"
)

// ErrReaderMarginViolated: the staged expiry would remove a snapshot
// younger than min_reader_margin or a branch/tag head. Refused outright:
// it would delete files a reader may be using.
var ErrReaderMarginViolated = errors.New("expiry would remove a protected snapshot")

// ExpiryCounts are what Spark's expire_snapshots returns.
type ExpiryCounts struct {
	ExpiredSnapshots           int
	DeletedDataFiles           int
	DeletedPositionDeleteFiles int
	DeletedEqualityDeleteFiles int
	DeletedManifests           int
	DeletedManifestLists       int
	DeletedStatisticsFiles     int
}

// expireSnapshots runs iceberg-go's ExpireSnapshots with the job's horizon
// and retain_last, after checking what it staged: nothing younger than
// min_reader_margin and no ref head may go, whatever iceberg-go's
// retention resolution says. Files no remaining snapshot references are
// deleted once the commit lands; the report counts them by kind.
func (e *Executor) expireSnapshots(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var (
		rep       Report
		committed *table.Table
		noop      bool
		deferred  []string
	)
	olderThan := max(job.ExpireOlderThan, job.Settings.MinReaderMargin)
	var attemptStart time.Time
	op := func() error {
		rep.Attempts++
		attemptStart = time.Now()
		tbl, err := e.loadForAttempt(ctx, job)
		if err != nil {
			return err
		}
		fs, err := tbl.FS(ctx)
		if err != nil {
			return backoff.Permanent(fmt.Errorf("open table io: %w", err))
		}
		now := time.Now()
		txn := tbl.NewTransaction()
		deferDeletion := job.Settings.ExpireDeletionDelay > 0
		if err := txn.ExpireSnapshots(table.WithOlderThan(olderThan), table.WithRetainLast(job.Settings.RetainLast),
			table.WithPostCommit(!deferDeletion)); err != nil {
			return backoff.Permanent(fmt.Errorf("stage expiry: %w", err))
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return backoff.Permanent(fmt.Errorf("stage expiry: %w", err))
		}
		removed, err := removedSnapshots(tbl.Metadata(), staged.Metadata(), now.Add(-job.Settings.MinReaderMargin))
		if err != nil {
			return backoff.Permanent(err)
		}
		if len(removed) == 0 {
			noop = true
			return nil
		}
		before, err := reachable(ctx, fs, tbl.Metadata())
		if err != nil {
			return backoff.Permanent(fmt.Errorf("read history before expiry: %w", err))
		}
		if job.DryRun {
			// Expiry writes nothing before it commits: the staged
			// metadata's history says what would become unreachable.
			after, err := reachable(ctx, fs, staged.Metadata())
			if err != nil {
				return backoff.Permanent(fmt.Errorf("read staged history: %w", err))
			}
			rep.Expiry = before.minus(after)
			rep.Expiry.ExpiredSnapshots = len(removed)
			rep.DryRun = true
			return nil
		}
		next, err := txn.Commit(ctx)
		if err != nil && next != nil {
			// The catalog took the commit; only deleting some of the
			// unreachable files failed. The expiry stands; orphan cleanup
			// will find what is left.
			log.Warn("expiry committed, but deleting some unreachable files failed; orphan cleanup will find them",
				"error", err)
			err = nil
		}
		if err != nil {
			return e.commitFailure(job, &rep, "expiry", err)
		}
		committed = next
		after, err := reachable(ctx, fs, next.Metadata())
		if err != nil {
			log.Warn("expiry committed; could not count the deleted files", "error", err)
			return nil
		}
		rep.Expiry = before.minus(after)
		rep.Expiry.ExpiredSnapshots = len(removed)
		if deferDeletion {
			// iceberg-go leaves them; nothing else would remove them
			// (DESIGN.md pitfall 7): the planner schedules the later pass.
			deferred = before.unreachableIn(after)
		}
		return nil
	}
	if err := e.retryCommits(ctx, log, job, op, func() (int, time.Time) { return rep.Attempts, attemptStart }); err != nil {
		return retryOutcome(err, rep.Attempts), rep
	}
	if noop {
		log.Info("no snapshot to expire", "older_than", olderThan, "retain_last", job.Settings.RetainLast)
		return planner.Result{Outcome: planner.Noop}, rep
	}
	if rep.DryRun {
		log.Info("dry run: snapshots that would expire", "snapshots", rep.Expiry.ExpiredSnapshots, "older_than", olderThan)
		return planner.Result{Outcome: planner.Succeeded}, rep
	}
	rep.Commits = 1
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	if len(deferred) > 0 {
		log.Info("deletion of the files expiry made unreachable deferred", "files", len(deferred),
			"delay", job.Settings.ExpireDeletionDelay)
	}
	return planner.Result{Outcome: planner.Succeeded, Table: committed, DeferredDeletes: deferred}, rep
}

// deleteExpiredFiles is the later pass of a deferred expiry: every file is
// checked against the table's whole history again (a rollback or a branch
// may reference it now) and deleted only if nothing does.
func (e *Executor) deleteExpiredFiles(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var rep Report
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("load table: %w", err)}, rep
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("open table io: %w", err)}, rep
	}
	refs, err := reachable(ctx, fs, tbl.Metadata())
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("read table history: %w", err)}, rep
	}
	referenced := refs.locations(tbl)
	for _, f := range job.Files {
		if referenced[location.Identity(f)] {
			rep.Orphans.StillReferenced++
			continue
		}
		if err := fs.Remove(f); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("delete %s: %w", f, err)}, rep
		}
		rep.Orphans.DeletedFiles++
	}
	log.Info("deferred expiry deletion done", "deleted", rep.Orphans.DeletedFiles, "still_referenced", rep.Orphans.StillReferenced)
	return planner.Result{Outcome: planner.Succeeded}, rep
}

// removedSnapshots lists the snapshots the staged metadata drops, and
// refuses if one is younger than cutoff or is still a branch or tag head.
func removedSnapshots(before, after table.Metadata, cutoff time.Time) ([]*table.Snapshot, error) {
	kept := map[int64]bool{}
	for _, s := range after.Snapshots() {
		kept[s.SnapshotID] = true
	}
	heads := map[int64]string{}
	for name, ref := range before.Refs() {
		heads[ref.SnapshotID] = name
	}
	var removed []*table.Snapshot
	for _, s := range before.Snapshots() {
		if kept[s.SnapshotID] {
			continue
		}
		if name, ok := heads[s.SnapshotID]; ok {
			return nil, fmt.Errorf("%w: snapshot %d is the head of %q", ErrReaderMarginViolated, s.SnapshotID, name)
		}
		if ts := time.UnixMilli(s.TimestampMs); !ts.Before(cutoff) {
			return nil, fmt.Errorf("%w: snapshot %d from %s is younger than min_reader_margin", ErrReaderMarginViolated, s.SnapshotID, ts.UTC().Format(time.RFC3339))
		}
		removed = append(removed, &s)
	}
	return removed, nil
}

// reachableFiles are the files a table's snapshots reference, by kind.
type reachableFiles struct {
	manifestLists, manifests, data, posDeletes, eqDeletes, stats map[string]bool
}

func reachable(ctx context.Context, fs iceio.IO, meta table.Metadata) (reachableFiles, error) {
	r := reachableFiles{manifestLists: map[string]bool{}, manifests: map[string]bool{}, data: map[string]bool{},
		posDeletes: map[string]bool{}, eqDeletes: map[string]bool{}, stats: map[string]bool{}}
	for sf := range meta.Statistics() {
		r.stats[sf.StatisticsPath] = true
	}
	for _, snap := range meta.Snapshots() {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		r.manifestLists[snap.ManifestList] = true
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return r, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if r.manifests[m.FilePath()] {
				continue
			}
			r.manifests[m.FilePath()] = true
			for entry, err := range m.Entries(fs, false) {
				if err != nil {
					return r, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				if entry.Status() == iceberg.EntryStatusDELETED {
					continue
				}
				df := entry.DataFile()
				switch df.ContentType() {
				case iceberg.EntryContentPosDeletes:
					r.posDeletes[df.FilePath()] = true
				case iceberg.EntryContentEqDeletes:
					r.eqDeletes[df.FilePath()] = true
				default:
					r.data[df.FilePath()] = true
				}
			}
		}
	}
	return r, nil
}

// unreachableIn lists the files r references that o does not.
func (r reachableFiles) unreachableIn(o reachableFiles) []string {
	var out []string
	for _, pair := range [][2]map[string]bool{{r.manifestLists, o.manifestLists}, {r.manifests, o.manifests},
		{r.data, o.data}, {r.posDeletes, o.posDeletes}, {r.eqDeletes, o.eqDeletes}, {r.stats, o.stats}} {
		for loc := range pair[0] {
			if !pair[1][loc] {
				out = append(out, loc)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (r reachableFiles) minus(o reachableFiles) ExpiryCounts {
	diff := func(a, b map[string]bool) int {
		n := 0
		for k := range a {
			if !b[k] {
				n++
			}
		}
		return n
	}
	return ExpiryCounts{
		DeletedDataFiles:           diff(r.data, o.data),
		DeletedPositionDeleteFiles: diff(r.posDeletes, o.posDeletes),
		DeletedEqualityDeleteFiles: diff(r.eqDeletes, o.eqDeletes),
		DeletedManifests:           diff(r.manifests, o.manifests),
		DeletedManifestLists:       diff(r.manifestLists, o.manifestLists),
		DeletedStatisticsFiles:     diff(r.stats, o.stats),
	}
}
