package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/arrowpool"
	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
)

// rewriter is what a data rewrite gives the rewrite every data rewrite
// shares (batches, commit validation and retries, cleanup): how it plans
// its groups and writes one group. binPack (iceberg-go's compaction
// planner and writer) and sortRewrite are the two.
type rewriter interface {
	plan(ctx context.Context, tbl *table.Table, job jobs.Job) ([]table.CompactionTaskGroup, int, error)
	write(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup) (table.CompactionGroupResult, error)
	// props are extra snapshot summary properties of the commits.
	props() iceberg.Properties
}

// binPack is bin-pack compaction's rewriter; planned are the groups of
// its last plan.
type binPack struct {
	e       *Executor
	mem     memory.Allocator
	target  int64
	planned []table.CompactionTaskGroup
}

func (b *binPack) plan(ctx context.Context, tbl *table.Table, job jobs.Job) ([]table.CompactionTaskGroup, int, error) {
	groups, skipped, err := planGroups(ctx, tbl, job)
	b.planned = groups
	return groups, skipped, err
}

func (b *binPack) write(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup) (table.CompactionGroupResult, error) {
	return b.e.writeCompactionGroup(ctx, tbl, g, b.target, b.mem)
}

func (b *binPack) props() iceberg.Properties { return nil }

func (e *Executor) compact(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	mem := e.newJobPool()
	defer mem.Close()
	bp := &binPack{e: e, mem: mem, target: job.Settings.TargetFileSize}
	res, rep := e.rewrite(ctx, log, job, bp)
	res.NothingToDo = idlePartitions(job, bp.planned, "no rewrite group: no set of files whose rewrite would change the partition "+
		"(candidates fewer than min_input_files, or one file with no delete applying)")
	return e.dropDeadDeletes(ctx, log, job, res, rep)
}

// rewrite rewrites the data files rw plans, in up to
// partial_progress_max_commits batches. A commit that finds a writer added
// deletes against its inputs since they were read (ErrNewDeletes) cannot
// land: its outputs hold those rows. With nothing of the job committed yet,
// the job plans again on the table as it is then, at most
// maxRewriteReplans times (replans); a writer that keeps deleting from
// the inputs makes it give up, a conflict like a lost commit race.
func (e *Executor) rewrite(ctx context.Context, log *slog.Logger, job jobs.Job, rw rewriter) (jobs.Result, Report) {
	rp := newReplans(job, maxRewriteReplans)
	for {
		res, rep := e.rewriteOnce(ctx, log, job, rw)
		if rp.allowed(ctx) && e.lostToNewDeletes(log, job, res, &rep, rp.n) {
			rp.abandon(rep)
			continue
		}
		return rp.endRewrite(res, rep)
	}
}

// rewriteOnce is one plan of rewrite, its batches written and committed.
func (e *Executor) rewriteOnce(ctx context.Context, log *slog.Logger, job jobs.Job, rw rewriter) (jobs.Result, Report) {
	var rep Report
	fail := func(outcome jobs.Outcome, err error) (jobs.Result, Report) {
		return jobs.Result{Outcome: outcome, Err: err}, rep
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return fail(jobs.Failed, fmt.Errorf("load table: %w", err))
	}
	if tbl.CurrentSnapshot() == nil {
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	rep.PlannedFromSnapshotID = tbl.CurrentSnapshot().SnapshotID

	groups, skipped, err := rw.plan(ctx, tbl, job)
	if err != nil {
		return fail(jobs.Failed, err)
	}
	rep.SkippedFiles = skipped
	if len(groups) == 0 {
		log.Info("nothing to compact", "skipped_files", skipped)
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	rep.Groups = len(groups)
	if job.DryRun {
		rep.DryRun = true
		for _, g := range groups {
			rep.RewrittenDataFiles += len(g.Tasks)
			rep.RewrittenBytes += g.TotalSizeBytes
			log.Info("would rewrite group", "partition", g.PartitionKey, "files", len(g.Tasks), "bytes", g.TotalSizeBytes)
		}
		return jobs.Result{Outcome: jobs.Succeeded}, rep
	}

	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(jobs.Failed, fmt.Errorf("open table io: %w", err))
	}
	var files, bytes int64
	for _, g := range groups {
		files += int64(len(g.Tasks))
		bytes += g.TotalSizeBytes
	}
	e.recoverOutputsBefore(ctx, log, tbl, fs)
	ctx, outputs, err := e.beginOutputs(ctx, tbl, fs, job, uuid.NewString())
	if err != nil {
		return fail(jobs.Failed, err)
	}
	// keepIntent: an outcome not known, or outputs not all deleted, leave
	// the intent for the table's next look.
	keepIntent := false
	defer func() { outputs.finish(log, keepIntent) }()
	e.phase("rewrite", files, bytes)
	batches := batch(groups, job.Settings.PartialProgressCommits)
	var (
		committed *table.Table
		lastErr   error
		gaveUp    bool
	)
	cleanUp := func(results []table.CompactionGroupResult) {
		n, paths, all := e.removeOutputs(tbl, fs, results, log)
		rep.OutputFilesCleanedUp += n
		keepIntent = keepIntent || !all || !outputs.covers(paths)
	}
	for i, b := range batches {
		if ctx.Err() != nil {
			lastErr = ctx.Err()
			break
		}
		results, err := e.writeBatch(ctx, log, tbl, b, rw.write)
		if err != nil {
			cleanUp(results)
			rep.FailedBatches++
			lastErr = err
			break
		}
		if e.crashed("before-commit") {
			keepIntent = true
			return fail(jobs.Failed, errCrashed)
		}
		head := tbl
		if committed != nil {
			head = committed // start from our own previous batch, not a sure conflict
		}
		next, err := e.commitBatch(ctx, log, job, tbl, head, fs, results, equalityDeletesOf(b), rw.props(), &rep)
		if err != nil {
			if errors.Is(err, errUnknownCommitState) {
				// Leave the outputs: a snapshot may reference them. The
				// intent stays: the table's next look checks them against
				// the history it then reads, and orphan cleanup, with its
				// age margin, remains their owner otherwise.
				log.Error("commit outcome unknown; output files left in place for the table's next look",
					"batch", i+1, "error", err)
				keepIntent = true
				rep.FailedBatches++
				lastErr = err
				break
			}
			cleanUp(results)
			rep.FailedBatches++
			lastErr = err
			// Deletes a writer added against the inputs are a race with
			// it like a lost commit, not a fault: rewrite plans again, and
			// a job that keeps losing gets the conflict cool-down.
			gaveUp = conflict.IsRetryable(err) || errors.Is(err, ErrNewDeletes)
			log.Warn("batch abandoned; its output files were deleted", "batch", i+1, "batches", len(batches), "error", err)
			break
		}
		committed = next
		if e.crashed("after-commit") {
			keepIntent = true
			return fail(jobs.Failed, errCrashed)
		}
		if len(batches) > 1 {
			log.Info("batch committed", "batch", i+1, "batches", len(batches),
				"snapshot_id", next.CurrentSnapshot().SnapshotID)
		}
	}
	if lastErr != nil {
		for _, b := range batches[rep.Commits:] {
			for _, g := range b {
				rep.FailedDataFiles += len(g.Tasks)
			}
		}
	}
	switch {
	case committed != nil:
		// Partial progress: what committed stays committed.
		return jobs.Result{Outcome: jobs.Succeeded, Table: committed, Err: lastErr}, rep
	case gaveUp:
		return fail(jobs.GaveUp, lastErr)
	default:
		return fail(jobs.Failed, lastErr)
	}
}

// batch splits groups into at most n commits, in order.
func batch(groups []table.CompactionTaskGroup, n int) [][]table.CompactionTaskGroup {
	if n < 1 {
		n = 1
	}
	per := (len(groups) + n - 1) / n
	var out [][]table.CompactionTaskGroup
	for start := 0; start < len(groups); start += per {
		out = append(out, groups[start:min(start+per, len(groups))])
	}
	return out
}

// writeBatch reads each group (deletes applied) and writes its outputs
// once, the groups at once (writeGroups). Each group gets a progress line:
// a large partition takes minutes.
func (e *Executor) writeBatch(ctx context.Context, log *slog.Logger, tbl *table.Table, groups []table.CompactionTaskGroup,
	write groupWriter) ([]table.CompactionGroupResult, error) {
	start := time.Now()
	return writeGroups(ctx, tbl, groups, write, func(i int, gr table.CompactionGroupResult) {
		log.Info("group rewritten, not yet committed", "group", i+1, "groups", len(groups), "partition", groups[i].PartitionKey,
			"files_in", len(gr.OldDataFiles), "files_out", len(gr.NewDataFiles), "bytes_in", gr.BytesBefore,
			"duration", time.Since(start).Round(time.Millisecond))
	})
}

// equalityDeletesOf lists, by path, the equality deletes that apply to the
// groups' input files.
func equalityDeletesOf(groups []table.CompactionTaskGroup) map[string]iceberg.DataFile {
	out := map[string]iceberg.DataFile{}
	for _, g := range groups {
		for _, t := range g.Tasks {
			for _, d := range t.EqualityDeleteFiles {
				out[d.FilePath()] = d
			}
		}
	}
	return out
}

// removeOutputs deletes the files results wrote; it returns how many it
// deleted, their paths, and whether every one is gone.
func (e *Executor) removeOutputs(tbl *table.Table, fs iceio.IO, results []table.CompactionGroupResult, log *slog.Logger) (int, []string, bool) {
	var paths []string
	for _, gr := range results {
		for _, df := range gr.NewDataFiles {
			paths = append(paths, df.FilePath())
		}
	}
	n, all := e.removeOwn(tbl, fs, paths, log)
	return n, paths, all
}

// removePaths is removeOwn's count alone.
func (e *Executor) removePaths(tbl *table.Table, fs iceio.IO, paths []string, log *slog.Logger) int {
	n, _ := e.removeOwn(tbl, fs, paths, log)
	return n
}

// The data path of a rewrite. A group's inputs are cut into units of
// about one output file each, and every unit is a pipeline: iceberg-go's
// scan reads and decodes its files (deletes applied) on its own goroutines
// while the unit's writer encodes and compresses what they decoded. Units
// of every group of a batch run at once, at most Options.Concurrency at a
// time across the executor (each holds a token while it writes), so a
// partition of several target files' worth is written on every core the
// concurrency allows, and memory is bounded by it: a unit holds one
// buffered row group (write.parquet.row-group-size-bytes) and a few
// decoded batches.
//
// A unit's buffers come from one pool per job (arrowpool) and are reused
// from batch to batch and file to file. Data files with deletes are
// decoded with Go's allocator: the delete readers keep strings that point
// into the decoded delete files, and the pool must never hand those
// buffers out again.

// jobPoolLimit bounds the freed buffers a job's pool keeps (each below a
// mebibyte: pages, small batches).
const jobPoolLimit = 64 << 20

// tokens bound the units written at once across the executor.
type tokens chan struct{}

func newTokens(n int) tokens { return make(tokens, max(n, 1)) }

func (t tokens) acquire(ctx context.Context) error {
	select {
	case t <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t tokens) release() { <-t }

// groupWriter writes one group of a batch.
type groupWriter func(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup) (table.CompactionGroupResult, error)

// writeGroups runs write on every group at once and returns their results
// in order, with the first error; a failed group cancels the others, and
// every result carries the files its group wrote, for the caller to
// delete.
func writeGroups(ctx context.Context, tbl *table.Table, groups []table.CompactionTaskGroup, write groupWriter,
	done func(i int, gr table.CompactionGroupResult)) ([]table.CompactionGroupResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]table.CompactionGroupResult, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gr, err := write(ctx, tbl, g)
			results[i] = gr
			if err != nil {
				errs[i] = fmt.Errorf("rewrite group %s: %w", g.PartitionKey, err)
				cancel(errs[i])
				return
			}
			done(i, gr)
		}()
	}
	wg.Wait()
	// The first group's own error, not the cancellation it caused in
	// the others.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return results, cause
	}
	return results, errors.Join(errs...)
}

// writeCompactionGroup writes a bin-pack group through reactor's writer,
// or through iceberg-go's where reactor's does not apply.
func (e *Executor) writeCompactionGroup(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, target int64,
	mem memory.Allocator) (table.CompactionGroupResult, error) {
	if !e.opts.icebergWriter {
		f, err := datapath.OwnWriterFor(ctx, tbl, g, target)
		if err == nil {
			return e.writeUnits(ctx, tbl, g, f, mem, datapath.SplitUnits(g.Tasks, target))
		}
		if !errors.Is(err, datapath.ErrNotOwnWriter) {
			return table.CompactionGroupResult{}, err
		}
		e.log.Debug("group written by iceberg-go's writer", "partition", g.PartitionKey, "why", err)
	}
	if err := e.tokens.acquire(ctx); err != nil {
		return table.CompactionGroupResult{}, err
	}
	defer e.tokens.release()
	// Outputs roll at reactor's target, not only the table
	// property's: a tier merge may hold several targets' worth.
	// iceberg-go names its files itself: each is added to the job's
	// output intent before it is created.
	gr, err := table.ExecuteCompactionGroup(ctx, recordingTable(ctx, tbl), g, table.WithCompactionTargetFileSize(target))
	if err == nil {
		e.advance(int64(len(g.Tasks)), g.TotalSizeBytes)
	}
	return gr, err
}

// writeUnits writes each unit of g under a token, all at once, and
// returns g's result with every file written (also on error, for cleanup).
func (e *Executor) writeUnits(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, f *datapath.Format,
	mem memory.Allocator, units [][]table.FileScanTask) (table.CompactionGroupResult, error) {
	res := table.CompactionGroupResult{PartitionKey: g.PartitionKey, BytesBefore: g.TotalSizeBytes,
		SafePosDeletes: table.CollectSafePositionDeletes(g.Tasks), SafeDeletionVectors: table.CollectSafeDeletionVectors(g.Tasks)}
	for _, t := range g.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	files := make([][]iceberg.DataFile, len(units))
	errs := make([]error, len(units))
	var wg sync.WaitGroup
	for i, tasks := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.tokens.acquire(ctx); err != nil {
				errs[i] = err
				return
			}
			defer e.tokens.release()
			files[i], errs[i] = datapath.WriteUnit(ctx, tbl, f, mem, i, tasks)
			if errs[i] != nil {
				cancel(errs[i])
				return
			}
			var bytes int64
			for _, t := range tasks {
				bytes += t.File.FileSizeBytes()
			}
			e.advance(int64(len(tasks)), bytes)
		}()
	}
	wg.Wait()
	for _, fs := range files {
		for _, df := range fs {
			res.NewDataFiles = append(res.NewDataFiles, df)
			res.BytesAfter += df.FileSizeBytes()
		}
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return res, cause
	}
	return res, errors.Join(errs...)
}

// newJobPool is the buffer pool of one job's data path; the job closes
// it when its data path is done (what it keeps mapped is not Go memory).
func (e *Executor) newJobPool() *arrowpool.Allocator {
	return arrowpool.New(arrowpool.Options{Poison: e.opts.poisonFreed, Limit: jobPoolLimit})
}
