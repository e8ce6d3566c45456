package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/tablename"
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
func (e *Executor) expireSnapshots(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var (
		rep       Report
		pre, post *table.Table
		removed   []*table.Snapshot
	)
	olderThan := max(job.ExpireOlderThan, 0)
	retainLast := max(job.ExpireRetainLast, job.Settings.RetainLast, 1)
	delay := max(job.Settings.MinReaderMargin, job.Settings.ExpireDeletionDelay)
	var (
		attemptStart time.Time
		intent       deletions.Ref
	)
	op := func() error {
		rep.Attempts++
		attemptStart = time.Now()
		tbl, err := e.loadForAttempt(ctx, job)
		if err != nil {
			return err
		}
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithOlderThan(olderThan), table.WithRetainLast(retainLast),
			table.WithPostCommit(false)); err != nil {
			return backoff.Permanent(fmt.Errorf("stage expiry: %w", err))
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return backoff.Permanent(fmt.Errorf("stage expiry: %w", err))
		}
		removed, err = removedSnapshots(tbl.Metadata(), staged.Metadata())
		if err != nil {
			return backoff.Permanent(err)
		}
		if len(removed) == 0 || job.DryRun {
			pre, post = tbl, staged.Table
			return nil
		}
		if intent.Location == "" && delay > 0 {
			// Between the commit and the pending list a crash would leave
			// the unlinked files to nobody: say first what is about to go.
			if intent, err = writeIntent(ctx, tbl, job); err != nil {
				return backoff.Permanent(err)
			}
		}
		next, err := txn.Commit(ctx)
		if err != nil {
			return e.commitFailure(job, &rep, "expiry", err)
		}
		pre, post = tbl, next
		return nil
	}
	err := e.retryCommits(ctx, log, job, op, func() (int, time.Time) { return rep.Attempts, attemptStart })
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
		return retryOutcome(err, rep.Attempts), rep
	}
	if len(removed) == 0 {
		log.Info("no snapshot to expire", "older_than", olderThan, "retain_last", retainLast)
		return planner.Result{Outcome: planner.Noop}, rep
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
			return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("read history: %w", err)}, rep
		}
		log.Info("dry run: snapshots that would expire", "snapshots", len(removed), "files", len(files),
			"older_than", olderThan, "retain_last", retainLast)
		return planner.Result{Outcome: planner.Succeeded}, rep
	}
	rep.Commits = 1
	rep.CommittedSnapshotID = post.CurrentSnapshot().SnapshotID
	res := planner.Result{Outcome: planner.Succeeded, Table: post}
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
		e.removeIntent(fs, intent, log)
		return res, rep
	}
	if delay <= 0 {
		// min_reader_margin 0: the operator says no reader outlives a
		// commit. Deleted now, through the same checks as a later pass.
		var x ExpiryCounts
		if _, err := e.deleteUnlinked(ctx, log, post, fs, files, &x, &rep.Orphans); err != nil {
			log.Warn("expiry committed; deleting the unlinked files failed; orphan cleanup will find the rest", "error", err)
		}
		x.ExpiredSnapshots = len(removed)
		rep.Expiry = x
		return res, rep
	}
	batch := deletions.Batch{Table: job.TableName, JobID: job.ID, LeftAt: leftAt, Due: leftAt.Add(delay), Files: files}
	ref, err := deletions.Write(fs, post.Location(), batch)
	if err != nil {
		log.Error("expiry committed, but its pending-deletion list could not be written; the deletion pass will rebuild it",
			"files", len(files), "error", err)
		res.PendingDeletes = []deletions.Ref{intent}
		return res, rep
	}
	e.removeIntent(fs, intent, log)
	rep.Expiry.Deferred, rep.Expiry.DeletionDue = true, ref.Due
	log.Info("files unlinked by the expiry wait for min_reader_margin before deletion", "files", len(files),
		"min_reader_margin", delay, "due", ref.Due, "list", ref.Location)
	res.PendingDeletes = []deletions.Ref{ref}
	return res, rep
}

// deleteExpiredFiles is the later pass of an expiry: for each due batch,
// every file is checked against the table's whole history again (a
// rollback, a branch or a re-added file may reference it now) and deleted
// only if nothing does; then the batch is removed. It is the one path that
// deletes what expiry unlinked (iceberg-go's post-commit deletion is never
// used, and orphan cleanup leaves pending files alone).
func (e *Executor) deleteExpiredFiles(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var rep Report
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("load table: %w", err), PendingDeletes: job.PendingDeletes}, rep
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("open table io: %w", err), PendingDeletes: job.PendingDeletes}, rep
	}
	e.recoverOutputsBefore(ctx, log, tbl, fs)
	now := time.Now()
	var left []deletions.Ref
	var gone int
	for i, ref := range job.PendingDeletes {
		if ref.Intent {
			rebuilt, err := e.recoverIntent(ctx, log, job, tbl, fs, ref)
			if err != nil {
				return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: append(left, job.PendingDeletes[i:]...)}, rep
			}
			left = append(left, rebuilt...)
			continue
		}
		b, err := deletions.Read(fs, ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue // another pass finished it
		}
		if err != nil {
			return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: job.PendingDeletes[i:]}, rep
		}
		if b.Due.After(now) {
			// Never early, whatever the batch's name said.
			left = append(left, ref)
			continue
		}
		n, err := e.deleteUnlinked(ctx, log, tbl, fs, b.Files, &rep.Expiry, &rep.Orphans)
		gone += n
		if err != nil {
			return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: append(left, job.PendingDeletes[i:]...)}, rep
		}
		if err := deletions.Remove(fs, ref); err != nil {
			return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: append(left, job.PendingDeletes[i:]...)}, rep
		}
	}
	if gone > 0 {
		// Only this pass deletes unlinked files: something outside
		// reactor removed these.
		log.Warn("files due for deletion were already gone", "files", gone)
	}
	log.Info("unlinked files deleted", "batches", len(job.PendingDeletes), "left", len(left), "deleted", rep.Expiry.Files(),
		"still_referenced", rep.Orphans.StillReferenced)
	return planner.Result{Outcome: planner.Succeeded, PendingDeletes: left}, rep
}

// deleteUnlinked deletes files no snapshot, metadata file or statistics
// file of tbl's history references, counting them by kind in x and the
// referenced ones in or. It returns how many were already gone. On an
// object store it deletes storeConcurrency files at once (each a round
// trip or two); locally one at a time.
func (e *Executor) deleteUnlinked(ctx context.Context, log *slog.Logger, tbl *table.Table, fs iceio.IO, files []deletions.File,
	x *ExpiryCounts, or *OrphanReport) (int, error) {
	referenced, done, err := e.referencedBy(ctx, tbl, fs)
	if err != nil {
		return 0, fmt.Errorf("read table history: %w", err)
	}
	defer done()
	var (
		mu       sync.Mutex // guards gone, x, or, firstErr and referenced
		gone     int
		firstErr error
		stop     = make(chan struct{})
		next     = make(chan deletions.File)
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			close(stop)
		}
	}
	deleteOne := func(f deletions.File) {
		e.advance(1, 0)
		mu.Lock()
		again := referenced(location.Identity(f.Path))
		if again {
			or.StillReferenced++
		}
		mu.Unlock()
		if again {
			log.Info("an unlinked file is referenced again; kept", "path", f.Path)
			return
		}
		// The lease, per file: a replica cut off mid-pass stops within
		// the deletions in flight; the batch stays for the table's next
		// owner.
		if err := e.checkCommit(tablename.Format(tbl.Identifier())); err != nil {
			fail(err)
			return
		}
		err := fs.Remove(f.Path)
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			fail(fmt.Errorf("delete %s: %w", f.Path, err))
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			gone++
			return
		}
		x.count(f.Kind)
		or.DeletedFiles++
	}
	e.phase("delete", int64(len(files)), 0)
	for range max(storeConcurrency(fs), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				deleteOne(f)
			}
		}()
	}
feed:
	for _, f := range files {
		select {
		case next <- f:
		case <-stop:
			break feed
		}
	}
	close(next)
	wg.Wait()
	return gone, firstErr
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
