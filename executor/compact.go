package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/planner"
)

// rewriter is how a data rewrite plans its groups and writes one group:
// bin-pack (iceberg-go's compaction planner and writer) or sort. Both share
// the rest: batches, commit validation and retries, cleanup.
type rewriter struct {
	plan  func(ctx context.Context, tbl *table.Table, job planner.Job) ([]table.CompactionTaskGroup, int, error)
	write groupWriter
	// props are extra snapshot summary properties of the commits.
	props iceberg.Properties
}

func (e *Executor) compact(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var planned []table.CompactionTaskGroup
	res, rep := e.rewrite(ctx, log, job, rewriter{
		plan: func(ctx context.Context, tbl *table.Table, job planner.Job) ([]table.CompactionTaskGroup, int, error) {
			groups, skipped, err := planGroups(ctx, tbl, job)
			planned = groups
			return groups, skipped, err
		},
		write: e.compactionGroupWriter(job.Settings.TargetFileSize, e.newJobPool()),
	})
	res.NothingToDo = idlePartitions(job, planned, "no rewrite group: no set of files whose rewrite would change the partition "+
		"(candidates fewer than min_input_files, or one file with no delete applying)")
	return e.dropDeadDeletes(ctx, log, job, res, rep)
}

// rewrite rewrites the data files rw plans, in up to
// partial_progress_max_commits batches.
func (e *Executor) rewrite(ctx context.Context, log *slog.Logger, job planner.Job, rw rewriter) (planner.Result, Report) {
	var rep Report
	fail := func(outcome planner.Outcome, err error) (planner.Result, Report) {
		return planner.Result{Outcome: outcome, Err: err}, rep
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return fail(planner.Failed, fmt.Errorf("load table: %w", err))
	}
	if tbl.CurrentSnapshot() == nil {
		return planner.Result{Outcome: planner.Noop}, rep
	}
	rep.PlannedFromSnapshotID = tbl.CurrentSnapshot().SnapshotID

	groups, skipped, err := rw.plan(ctx, tbl, job)
	if err != nil {
		return fail(planner.Failed, err)
	}
	rep.SkippedFiles = skipped
	if len(groups) == 0 {
		log.Info("nothing to compact", "skipped_files", skipped)
		return planner.Result{Outcome: planner.Noop}, rep
	}
	rep.Groups = len(groups)
	if job.DryRun {
		rep.DryRun = true
		for _, g := range groups {
			rep.RewrittenDataFiles += len(g.Tasks)
			rep.RewrittenBytes += g.TotalSizeBytes
			log.Info("would rewrite group", "partition", g.PartitionKey, "files", len(g.Tasks), "bytes", g.TotalSizeBytes)
		}
		return planner.Result{Outcome: planner.Succeeded}, rep
	}

	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(planner.Failed, fmt.Errorf("open table io: %w", err))
	}
	batches := batch(groups, job.Settings.PartialProgressCommits)
	var (
		committed *table.Table
		lastErr   error
		gaveUp    bool
	)
	for i, b := range batches {
		if ctx.Err() != nil {
			lastErr = ctx.Err()
			break
		}
		results, err := e.writeBatch(ctx, log, tbl, b, rw.write)
		if err != nil {
			rep.OutputFilesCleanedUp += removeOutputs(fs, results, log)
			rep.FailedBatches++
			lastErr = err
			break
		}
		head := tbl
		if committed != nil {
			head = committed // start from our own previous batch, not a sure conflict
		}
		next, err := e.commitBatch(ctx, log, job, tbl, head, fs, results, equalityDeletesOf(b), rw.props, &rep)
		if err != nil {
			if errors.Is(err, errUnknownCommitState) {
				// Leave the outputs: a snapshot may reference them. Orphan
				// cleanup, with its age margin, is the safe owner now.
				log.Error("commit outcome unknown; output files left in place for orphan cleanup",
					"batch", i+1, "error", err)
				rep.FailedBatches++
				lastErr = err
				break
			}
			rep.OutputFilesCleanedUp += removeOutputs(fs, results, log)
			rep.FailedBatches++
			lastErr = err
			gaveUp = conflict.IsRetryable(err)
			log.Warn("batch abandoned; its output files were deleted", "batch", i+1, "batches", len(batches), "error", err)
			break
		}
		committed = next
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
		return planner.Result{Outcome: planner.Succeeded, Table: committed, Err: lastErr}, rep
	case gaveUp:
		return fail(planner.GaveUp, lastErr)
	default:
		return fail(planner.Failed, lastErr)
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
// once, the groups at once (datapath.go). Each group gets a progress line:
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

func removeOutputs(fs iceio.IO, results []table.CompactionGroupResult, log *slog.Logger) int {
	var paths []string
	for _, gr := range results {
		for _, df := range gr.NewDataFiles {
			paths = append(paths, df.FilePath())
		}
	}
	return removePaths(fs, paths, log)
}

func removePaths(fs iceio.IO, paths []string, log *slog.Logger) int {
	n := 0
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := fs.Remove(p); err != nil {
			if !errors.Is(err, iofs.ErrNotExist) {
				log.Warn("could not delete a file of a failed attempt; orphan cleanup will find it", "path", p, "error", err)
			}
			continue
		}
		n++
	}
	return n
}
