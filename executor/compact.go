package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/deadfiles"
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

// dropDeadDeletes finishes a delete-triggered compaction: the delete files
// of its delete-triggered partitions that apply to no live data file are
// removed in a metadata-only commit (a rewrite that deletes only delete
// files). Rewriting data cannot remove them: an equality delete whose keys
// lie outside every older file's range, beside a file too large to rewrite,
// is "live" to the partition-wide rule the rewrite's commit uses
// (CollectDeadEqualityDeletes) for ever, and the delete thresholds would
// schedule the same useless compaction every cool-down.
//
// Each attempt decides on the snapshot it commits on: it reloads the
// table, plans it, and commits only if the catalog head is still that
// snapshot (a conflict re-plans).
func (e *Executor) dropDeadDeletes(ctx context.Context, log *slog.Logger, job jobs.Job, res jobs.Result, rep Report) (jobs.Result, Report) {
	parts := map[string]bool{}
	for _, p := range job.Partitions {
		if p.ApplyDeletes {
			parts[p.Key] = true
		}
	}
	if len(parts) == 0 || res.Err != nil || (res.Outcome != jobs.Succeeded && res.Outcome != jobs.Noop) {
		return res, rep
	}
	var dead []deadfiles.Delete
	loop := commitLoop{e: e, log: log, job: job, rep: &rep, countCommitsOnly: true}
	committed, err := loop.run(ctx, func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
		dead = nil
		if tbl.CurrentSnapshot() == nil {
			return nil, nil
		}
		fs, err := tbl.FS(ctx)
		if err != nil {
			return nil, fmt.Errorf("open table io: %w", err)
		}
		if dead, err = deadfiles.Find(ctx, fs, tbl, parts); err != nil {
			return nil, err
		}
		if len(dead) == 0 || job.DryRun {
			return nil, nil
		}
		if err := e.checkMetadataLog(tbl); err != nil {
			return nil, err
		}
		txn := tbl.NewTransaction()
		rw := txn.NewRewrite(iceberg.Properties{jobs.SnapshotJobProperty: job.ID})
		for _, d := range dead {
			rw.DeleteFile(d.File)
		}
		if err := rw.Commit(ctx); err != nil {
			return nil, fmt.Errorf("stage removal of dead delete files: %w", err)
		}
		staged := stagedFiles(txn, fs)
		next, err := txn.Commit(ctx)
		if err != nil {
			// The compaction this finishes committed under the same job
			// id: only this commit's own snapshot id tells it landed.
			return nil, lost(err, tbl, fs, staged, bySnapshotID, stagedSnapshotID(txn))
		}
		return next, nil
	})
	if err != nil {
		if res.Outcome == jobs.Succeeded {
			// The rewrite itself committed; the dead deletes wait for the
			// next job.
			log.Warn("could not remove delete files that apply to nothing", "error", err)
			return res, rep
		}
		return retryOutcome(err, loop.n), rep
	}
	if len(dead) == 0 {
		return res, rep
	}
	for _, d := range dead {
		log.Debug("delete file applies to no live data file", "partition", d.Key, "delete_file", d.File.FilePath(), "why", d.Why)
		delete(res.NothingToDo, d.Key)
	}
	rep.RemovedDeleteFiles += len(dead)
	if job.DryRun {
		log.Info("would remove delete files that apply to no live data file", "delete_files", len(dead))
		return res, rep
	}
	rep.Commits++
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	log.Info("removed delete files that apply to no live data file (metadata only)", "delete_files", len(dead),
		"snapshot_id", rep.CommittedSnapshotID)
	return jobs.Result{Outcome: jobs.Succeeded, Table: committed, NothingToDo: res.NothingToDo}, rep
}
