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
	"github.com/google/uuid"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/scope"
)

// ErrReaderMarginViolated: the staged expiry would remove a branch or tag
// head. Refused outright.
var ErrReaderMarginViolated = errors.New("expiry would remove a protected snapshot")

// ExpiryCounts are what Spark's expire_snapshots returns, plus where the
// files went: reactor unlinks them at the expiry and deletes them once
// min_reader_margin has passed (Deferred), or at once with a zero margin.
type ExpiryCounts struct {
	ExpiredSnapshots           int
	DeletedDataFiles           int
	DeletedPositionDeleteFiles int
	DeletedEqualityDeleteFiles int
	DeletedManifests           int
	DeletedManifestLists       int
	DeletedStatisticsFiles     int
	// Deferred: the counted files were unlinked, not deleted; they are
	// deleted at DeletionDue by a delete_expired_files pass.
	Deferred    bool
	DeletionDue time.Time
	// Kept: the counted files were unlinked and are kept for good, since
	// the table's gc.enabled is false (Iceberg's: other tables may share
	// them).
	Kept bool
}

// Files is the number of files counted, of every kind.
func (x ExpiryCounts) Files() int {
	return x.DeletedDataFiles + x.DeletedPositionDeleteFiles + x.DeletedEqualityDeleteFiles +
		x.DeletedManifests + x.DeletedManifestLists + x.DeletedStatisticsFiles
}

func (x *ExpiryCounts) count(kind history.Kind) {
	switch kind {
	case history.Data:
		x.DeletedDataFiles++
	case history.PositionDelete:
		x.DeletedPositionDeleteFiles++
	case history.EqualityDelete:
		x.DeletedEqualityDeleteFiles++
	case history.Manifest:
		x.DeletedManifests++
	case history.ManifestList:
		x.DeletedManifestLists++
	case history.Statistics:
		x.DeletedStatisticsFiles++
	}
}

// expireSnapshots runs iceberg-go's ExpireSnapshots with the job's
// retention (never removing a ref head) and deletes nothing itself: the
// files no remaining snapshot references are written to the table's
// pending-deletion list, due min_reader_margin after the commit, which is
// when no reader that could still see them is left (docs/design.md#seed-reader-incident).
// An attempt reads only the table's metadata, so it costs about what a
// writer's commit costs and retries cheaply against a busy writer; the
// history walk that finds the unlinked files runs once, after the commit.
func (e *Executor) expireSnapshots(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	var (
		rep       Report
		pre, post *table.Table
		removed   []*table.Snapshot
	)
	olderThan := max(job.ExpireOlderThan, 0)
	retainLast := max(job.ExpireRetainLast, job.Settings.RetainLast, 1)
	delay := max(job.Settings.MinReaderMargin, job.Settings.ExpireDeletionDelay)
	var intent deletions.Ref
	var gcOff bool
	// s3Tables says why the table lies in an S3 table bucket: expired
	// there like a table with gc.enabled false, nothing deleted.
	var s3Tables string
	loop := commitLoop{e: e, log: log, job: job, rep: &rep}
	_, err := loop.run(ctx, func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
		// A history with snapshots left out would make their files look
		// unlinked: nothing is expired on it.
		if p := scope.Partial(tbl.Metadata()); p != "" {
			e.met.DeletionsRefused.WithLabelValues(job.Table.String(), string(scope.PartialMetadata)).Inc()
			return nil, fmt.Errorf("expiry refused (%s): %s; force snapshot-loading-mode=all in the catalog",
				scope.PartialMetadata, p)
		}
		gcOff = !scope.GCEnabled(tbl.Metadata())
		s3Tables = scope.S3Tables(tbl.Metadata())
		staging := tbl
		if gcOff {
			// iceberg-go (like Iceberg Java) refuses to expire a table
			// whose gc.enabled is false, for fear of deleting files other
			// tables share. reactor deletes nothing for it (no batch, no
			// intent), so the metadata may still be bounded.
			var err error
			if staging, err = e.withoutGCProperty(tbl); err != nil {
				return nil, fmt.Errorf("stage expiry: %w", err)
			}
		}
		if err := e.checkMetadataLog(tbl); err != nil {
			return nil, err
		}
		txn := staging.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithOlderThan(olderThan), table.WithRetainLast(retainLast),
			table.WithPostCommit(false)); err != nil {
			return nil, fmt.Errorf("stage expiry: %w", err)
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return nil, fmt.Errorf("stage expiry: %w", err)
		}
		removed, err = removedSnapshots(tbl.Metadata(), staged.Metadata())
		if err != nil {
			return nil, err
		}
		if len(removed) == 0 || job.DryRun {
			pre, post = tbl, staged.Table
			return nil, nil
		}
		if intent.Location == "" && delay > 0 && !gcOff && s3Tables == "" {
			// Between the commit and the pending list a crash would leave
			// the unlinked files to nobody: say first what is about to go.
			if intent, err = e.writeIntent(ctx, log, tbl, job); err != nil {
				return nil, err
			}
		}
		next, err := txn.Commit(ctx)
		if err != nil {
			// An expiry adds no snapshot to look up: an unknown outcome
			// stays unknown, and the intent with it (the next pass
			// recovers it).
			return nil, lost(err, nil, nil, nil, noLookup, 0)
		}
		pre, post = tbl, next
		return next, nil
	})
	if err != nil || post == nil || len(removed) == 0 {
		if intent.Location != "" {
			// Nothing committed: the intent has nothing to recover. If the
			// commit's outcome is unknown, the pass's recovery decides.
			if rerr := e.dropIntent(ctx, job, intent, errors.Is(err, errUnknownCommitState)); rerr != nil {
				log.Warn("could not remove the expiry's intent; the next deletion pass will", "error", rerr)
			}
		}
	}
	if err != nil {
		return retryOutcome(err, loop.n), rep
	}
	if len(removed) == 0 {
		log.Info("no snapshot to expire", "older_than", olderThan, "retain_last", retainLast)
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	leftAt := time.Now()
	fs, err := pre.FS(ctx)
	var files []deletions.File
	if err == nil {
		e.phase("read history", 0, 0)
		files, err = e.expiryUnlinked(ctx, fs, pre, post, job.DryRun)
	}
	rep.Expiry.ExpiredSnapshots = len(removed)
	for _, f := range files {
		rep.Expiry.count(f.Kind)
	}
	if job.DryRun {
		rep.DryRun = true
		if err != nil {
			return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("read history: %w", err)}, rep
		}
		log.Info("dry run: snapshots that would expire", "snapshots", len(removed), "files", len(files),
			"older_than", olderThan, "retain_last", retainLast)
		return jobs.Result{Outcome: jobs.Succeeded}, rep
	}
	rep.Commits = 1
	rep.CommittedSnapshotID = post.CurrentSnapshot().SnapshotID
	res := jobs.Result{Outcome: jobs.Succeeded, Table: post}
	if s3Tables != "" {
		// AWS's unreferenced file removal deletes what the expiry
		// unlinked; the table bucket would refuse reactor's deletes.
		rep.Expiry = ExpiryCounts{ExpiredSnapshots: len(removed), Kept: true}
		if n := len(files); err == nil && n > 0 {
			rep.Refusals.ByRule = map[scope.Rule]int{scope.S3TablesRule: n}
			e.met.DeletionsRefused.WithLabelValues(job.Table.String(), string(scope.S3TablesRule)).Add(float64(n))
		}
		log.Info("expiry committed; the table is an S3 Tables table, so the files it unlinked are left to S3's unreferenced file removal, not deleted",
			"expired_snapshots", len(removed), "kept_files", len(files), "rule", scope.S3TablesRule, "reason", s3Tables)
		return res, rep
	}
	if gcOff {
		if err != nil {
			log.Warn("expiry committed (gc.enabled is false: nothing is deleted); the files it unlinked could not be counted",
				"expired_snapshots", len(removed), "error", err)
			return res, rep
		}
		n := len(files)
		rep.Expiry = ExpiryCounts{ExpiredSnapshots: len(removed), Kept: true}
		if n > 0 {
			rep.Refusals.ByRule = map[scope.Rule]int{scope.GCDisabled: n}
			e.met.DeletionsRefused.WithLabelValues(job.Table.String(), string(scope.GCDisabled)).Add(float64(n))
		}
		log.Info("expiry committed; the table's gc.enabled is false, so the files it unlinked are kept, not deleted",
			"expired_snapshots", len(removed), "kept_files", n, "gc.enabled", post.Properties()[scope.GCEnabledKey])
		return res, rep
	}
	if err != nil {
		// The expiry stands; its intent stays and the next deletion pass
		// lists the unlinked files from the metadata it started on.
		log.Warn("expiry committed, but the files it unlinked could not be listed yet; the deletion pass will retry",
			"expired_snapshots", len(removed), "error", err)
		if intent.Location != "" {
			res.PendingDeletes = []deletions.Ref{intent}
		}
		return res, rep
	}
	if len(files) == 0 {
		e.removeIntent(fs, post, intent, log)
		return res, rep
	}
	// The roots are those of the metadata before the expiry (what the
	// unlinked files were written under) that the table still has.
	rc, err := e.newReclaim(ctx, log, pre, &rep.Refusals)
	if err == nil {
		rc = rc.within(e.rootsOf(post))
	}
	if err != nil {
		log.Warn("expiry committed, but the rule for deleting its files could not be prepared; the deletion pass will rebuild the list",
			"error", err)
		if intent.Location != "" {
			res.PendingDeletes = []deletions.Ref{intent}
		}
		return res, rep
	}
	if delay <= 0 {
		// min_reader_margin 0: the operator says no reader outlives a
		// commit. Deleted now, through the same checks as a later pass.
		var x ExpiryCounts
		if _, err := e.deleteUnlinked(ctx, log, post, fs, files, rc, &x, &rep.Orphans); err != nil {
			log.Warn("expiry committed; deleting the unlinked files failed; orphan cleanup will find the rest", "error", err)
		}
		x.ExpiredSnapshots = len(removed)
		rep.Expiry = x
		return res, rep
	}
	batch := deletions.Batch{Table: job.Table.String(), JobID: job.ID, LeftAt: leftAt, Due: leftAt.Add(delay), Files: files,
		Roots: rc.check.Roots()}
	refs, err := e.records(fs, post).WriteBatch(batch)
	if err != nil {
		log.Error("expiry committed, but its pending-deletion list could not be written; the deletion pass will rebuild it",
			"files", len(files), "error", err)
		res.PendingDeletes = append(refs, intent)
		return res, rep
	}
	e.removeIntent(fs, post, intent, log)
	rep.Expiry.Deferred, rep.Expiry.DeletionDue = true, refs[0].Due
	log.Info("files unlinked by the expiry wait for min_reader_margin before deletion", "files", len(files),
		"min_reader_margin", delay, "due", refs[0].Due, "list", refs[0].Location, "records", len(refs))
	res.PendingDeletes = refs
	return res, rep
}

// withoutGCProperty is tbl without its gc.enabled property, committing
// through the executor's catalog: what iceberg-go stages an expiry on when
// the table forbids deleting files and reactor deletes none. The commit
// carries only the expiry's own changes, so the table keeps its property.
func (e *Executor) withoutGCProperty(tbl *table.Table) (*table.Table, error) {
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.RemoveProperties([]string{scope.GCEnabledKey}); err != nil {
		return nil, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, e.cat), nil
}

// rootsOf are the canonical roots tbl's metadata names (the placement
// rule then keeps those that qualify).
func (e *Executor) rootsOf(tbl *table.Table) []string {
	r := scope.RootsOf(tableName(tbl), tbl.Metadata())
	var out []string
	for _, d := range []string{r.Location, r.Data, r.Metadata} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// removedSnapshots lists the snapshots the staged metadata drops, and
// refuses if one is still a branch or tag head.
func removedSnapshots(before, after table.Metadata) ([]*table.Snapshot, error) {
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
		removed = append(removed, &s)
	}
	return removed, nil
}

// maxBaseMetadataBytes bounds the metadata file an expiry intent names:
// it is read whole to rebuild the pending list. Real metadata files of
// tables with thousands of snapshots are tens of MiB.
const maxBaseMetadataBytes = 512 << 20

// DuePendingDeletes lists the table's pending-deletion batches due by now
// (by their names: each is verified when the pass reads it).
func (e *Executor) DuePendingDeletes(ctx context.Context, ident table.Identifier, now time.Time) ([]deletions.Ref, error) {
	tbl, err := e.cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table: %w", err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open table io: %w", err)
	}
	refs, err := e.records(fs, tbl).List()
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(refs) && !refs[n].Due.After(now) {
		n++
	}
	return refs[:n], nil
}

// pendingLocations lists every file any of the table's pending-deletion
// batches names, canonical: they are unreferenced but not orphans — the
// deletion pass owns them and deletes them once the reader margin has
// passed, which may be after the orphan margin measured from the file's
// creation. Batches that do not verify count too: shielding a file only
// ever keeps it.
func (e *Executor) pendingLocations(fs iceio.IO, tbl *table.Table) (map[string]bool, error) {
	return e.records(fs, tbl).Shielded()
}

// writeIntent records, before an expiry's commit, that it is about to
// unlink files, with the roots they lie under.
func (e *Executor) writeIntent(ctx context.Context, log *slog.Logger, tbl *table.Table, job jobs.Job) (deletions.Ref, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("open table io: %w", err)
	}
	var discard Refusals
	rc, err := e.newReclaim(ctx, log, tbl, &discard)
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("record the expiry's intent: %w", err)
	}
	ref, err := e.records(fs, tbl).WriteIntent(deletions.Intent{Table: job.Table.String(), JobID: job.ID,
		BaseMetadata: tbl.MetadataLocation(), Written: time.Now(), Roots: rc.check.Roots()})
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("record the expiry's intent: %w", err)
	}
	return ref, nil
}

func (e *Executor) removeIntent(fs iceio.IO, tbl *table.Table, ref deletions.Ref, log *slog.Logger) {
	if ref.Location == "" {
		return
	}
	if err := e.records(fs, tbl).Remove(ref); err != nil {
		log.Warn("could not remove the expiry's intent; the next deletion pass will", "error", err)
	}
}

// dropIntent removes the intent of an expiry that did not commit; with an
// unknown outcome it is left for the deletion pass, which can tell.
func (e *Executor) dropIntent(ctx context.Context, job jobs.Job, ref deletions.Ref, unknown bool) error {
	if unknown {
		return nil
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	return e.records(fs, tbl).Remove(ref)
}

// recoverIntent rebuilds the pending list of an expiry that committed but
// died before writing it: the files the snapshots of its base metadata
// referenced that the table's history no longer does. An expiry that never
// committed unlinked nothing and leaves an empty result. The rebuilt batch
// is due a whole margin from now: the commit's time is not known, only
// that it was before now. An intent that is not reactor's own for this
// table, or whose base metadata is another table's or too large, is
// refused: left where it is and not acted on.
func (e *Executor) recoverIntent(ctx context.Context, log *slog.Logger, job jobs.Job, tbl *table.Table, fs iceio.IO,
	refusals *Refusals, ref deletions.Ref) ([]deletions.Ref, error) {
	recs := e.records(fs, tbl)
	in, err := recs.ReadIntent(ref)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, deletions.ErrRefused) {
		e.refuseRecord(log, job.Table.String(), err, refusals)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := deletions.ReadBounded(fs, in.BaseMetadata, maxBaseMetadataBytes)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		log.Warn("the metadata an interrupted expiry started from is gone; its files are left to orphan cleanup",
			"metadata", in.BaseMetadata)
		return nil, recs.Remove(ref)
	case errors.Is(err, deletions.ErrRefused):
		e.refuseRecord(log, job.Table.String(), &deletions.Refusal{Location: ref.Location, Reason: deletions.RefusedTooLarge,
			Detail: fmt.Sprintf("its base metadata %s: %v", in.BaseMetadata, err)}, refusals)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the expiry's base metadata %s: %w", in.BaseMetadata, err)
	}
	base, err := table.ParseMetadataBytes(data)
	if err != nil {
		return nil, fmt.Errorf("parse the expiry's base metadata %s: %w", in.BaseMetadata, err)
	}
	if own, other := tbl.Metadata().TableUUID(), base.TableUUID(); own != uuid.Nil && other != own {
		e.refuseRecord(log, job.Table.String(), &deletions.Refusal{Location: ref.Location, Reason: deletions.RefusedOtherTable,
			Detail: fmt.Sprintf("its base metadata %s is table %s's, not %s", in.BaseMetadata, other, own)}, refusals)
		return nil, nil
	}
	files, err := unlinkedFiles(ctx, fs, base, tbl.Metadata())
	if err != nil {
		return nil, fmt.Errorf("list what the interrupted expiry unlinked: %w", err)
	}
	var out []deletions.Ref
	if len(files) > 0 {
		now := time.Now()
		delay := max(job.Settings.MinReaderMargin, job.Settings.ExpireDeletionDelay)
		refs, err := recs.WriteBatch(deletions.Batch{Table: in.Table, JobID: in.JobID, LeftAt: now,
			Due: now.Add(delay), Files: files, Roots: in.Roots})
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
		log.Info("rebuilt the pending list of an interrupted expiry", "job_id", in.JobID, "files", len(files), "due", refs[0].Due)
	}
	return out, recs.Remove(ref)
}
