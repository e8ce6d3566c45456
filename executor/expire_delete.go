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

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/tablename"
)

// deleteExpiredFiles is the later pass of an expiry: for each due batch,
// every file is checked against the deletion rule and the table's whole
// history again (a rollback, a branch or a re-added file may reference it
// now) and deleted only if both allow; then the batch is removed. It is
// the one path that deletes what expiry unlinked (iceberg-go's post-commit
// deletion is never used, and orphan cleanup leaves pending files alone).
// A batch or intent that does not verify as reactor's own is refused: left
// in place, counted, never acted on, and not asked about again.
func (e *Executor) deleteExpiredFiles(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	var rep Report
	fail := func(err error, left []deletions.Ref) (jobs.Result, Report) {
		return jobs.Result{Outcome: jobs.Failed, Err: err, PendingDeletes: left}, rep
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return fail(fmt.Errorf("load table: %w", err), job.PendingDeletes)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(fmt.Errorf("open table io: %w", err), job.PendingDeletes)
	}
	rc, err := e.newReclaim(ctx, log, tbl, &rep.Refusals)
	if err != nil {
		return fail(err, job.PendingDeletes)
	}
	if r := rc.refusedWhole(); r != nil && r.Rule == scope.PartialMetadata {
		// Not the files' fault: the batches wait for a whole history.
		e.met.DeletionsRefused.WithLabelValues(job.Table.String(), string(r.Rule)).Inc()
		return fail(fmt.Errorf("deletion pass refused: %w", r), job.PendingDeletes)
	}
	e.recoverOutputsBefore(ctx, log, tbl, fs)
	recs := e.records(fs, tbl)
	now := time.Now()
	var left []deletions.Ref
	var gone int
	for i, ref := range job.PendingDeletes {
		if ref.Intent {
			rebuilt, err := e.recoverIntent(ctx, log, job, tbl, fs, &rep.Refusals, ref)
			if err != nil {
				return fail(err, append(left, job.PendingDeletes[i:]...))
			}
			left = append(left, rebuilt...)
			continue
		}
		b, err := recs.ReadBatch(ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue // another pass finished it
		}
		if errors.Is(err, deletions.ErrRefused) {
			e.refuseRecord(log, job.Table.String(), err, &rep.Refusals)
			continue
		}
		if err != nil {
			return fail(err, append(left, job.PendingDeletes[i:]...))
		}
		if b.Due.After(now) {
			// Never early, whatever the batch's name said.
			left = append(left, ref)
			continue
		}
		n, err := e.deleteUnlinked(ctx, log, tbl, fs, b.Files, rc.within(b.Roots), &rep.Expiry, &rep.Orphans)
		gone += n
		if err != nil {
			return fail(err, append(left, job.PendingDeletes[i:]...))
		}
		if err := recs.Remove(ref); err != nil {
			return fail(err, append(left, job.PendingDeletes[i:]...))
		}
	}
	if gone > 0 {
		// Only this pass deletes unlinked files: something outside
		// reactor removed these.
		log.Warn("files due for deletion were already gone", "files", gone)
	}
	log.Info("unlinked files deleted", "batches", len(job.PendingDeletes), "left", len(left), "deleted", rep.Expiry.Files(),
		"still_referenced", rep.Orphans.StillReferenced, "refused", rep.Refusals.Total())
	return jobs.Result{Outcome: jobs.Succeeded, PendingDeletes: left}, rep
}

// deleteUnlinked deletes the files the deletion rule rc allows that no
// snapshot, metadata file or statistics file of tbl's history references,
// counting them by kind in x and the referenced ones in or. It returns how
// many were already gone. On an object store it deletes storeConcurrency
// files at once (each a round trip or two); locally one at a time.
func (e *Executor) deleteUnlinked(ctx context.Context, log *slog.Logger, tbl *table.Table, fs iceio.IO, files []deletions.File,
	rc *reclaim, x *ExpiryCounts, or *OrphanReport) (int, error) {
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
		canonical, ok := rc.allow(f.Path)
		if !ok {
			return
		}
		mu.Lock()
		again := referenced(location.Identity(canonical))
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
		err := fs.Remove(canonical)
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			fail(fmt.Errorf("delete %s: %w", canonical, err))
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
