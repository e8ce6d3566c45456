package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
)

// errUnknownCommitState marks a commit whose outcome the catalog did not
// tell: its outputs must not be deleted, since a snapshot may reference them.
var errUnknownCommitState = errors.New("commit outcome unknown")

// Executor runs jobs.
type Executor struct {
	cat   catalog.Catalog
	log   *slog.Logger
	met   *metrics.Metrics
	watch commitWatch
	// replayCommits sends every data rewrite through commitBatchReplay
	// (benchmarks compare the two paths).
	replayCommits bool
	// guard, when set, is asked before every commit (SetCommitGuard).
	guard CommitGuard
	// referenceMaxAge: see the constant (tests set 0: re-read before
	// every delete).
	referenceMaxAge time.Duration
	opts            Options
	// tokens bound the output files written at once (datapath.go);
	// sortSlot the groups sorted at once (one: sort_memory is per group).
	tokens   tokens
	sortSlot tokens
	// hist are the tables' history indexes (references.go); nil: every
	// question walks the whole history.
	hist *histories
}

// New creates an executor committing through cat.
func New(cat catalog.Catalog, log *slog.Logger, met *metrics.Metrics) *Executor {
	if log == nil {
		log = slog.Default()
	}
	if met == nil {
		met = metrics.New()
	}
	return &Executor{cat: cat, log: log, met: met, referenceMaxAge: referenceMaxAge, tokens: newTokens(1), sortSlot: newTokens(1),
		hist: newHistories(defaultHistoryBytes)}
}

// Report is what a job did, in the terms the Spark procedures report
// (rewrite_data_files, rewrite_manifests), plus reactor's commit
// bookkeeping.
type Report struct {
	Groups             int
	RewrittenDataFiles int
	AddedDataFiles     int
	RewrittenBytes     int64
	AddedBytes         int64
	RemovedDeleteFiles int
	Commits            int
	Attempts           int
	Conflicts          int
	// RetriesAfterCommit counts the retries that went right after an
	// observed writer commit rather than at the end of their backoff.
	RetriesAfterCommit      int
	FailedBatches           int
	SkippedFiles            int
	PlannedFromSnapshotID   int64
	CommittedSnapshotID     int64
	ManifestsRewritten      int
	ManifestsAdded          int
	Expiry                  ExpiryCounts
	Orphans                 OrphanReport
	OutputFilesCleanedUp    int
	StagedMetadataCleanedUp int
	Duration                time.Duration
	// Position-delete rewrite (Spark's rewrite_position_delete_files
	// result columns): delete files replaced and written, their bytes, and
	// the delete entries dropped because their data file is gone.
	RewrittenDeleteFiles int
	AddedDeleteFiles     int
	RewrittenDeleteBytes int64
	AddedDeleteBytes     int64
	DanglingDeleteRows   int64
	// FailedDataFiles are the inputs of groups that did not commit
	// (Spark's failed_data_files_count): a failed batch and those after it.
	FailedDataFiles int
	// SpilledRuns counts the sorted runs a sort job spilled to disk
	// (0: every group was sorted in memory).
	SpilledRuns int
	// DryRun reports are what the job would have done.
	DryRun bool
	// Backend is where the job ran: BackendLocal or BackendSpark.
	Backend string
}

// Run executes job and reports how it ended. It never panics on bad input
// and never leaves its own output files behind when it does not commit them.
func (e *Executor) Run(ctx context.Context, job planner.Job) (planner.Result, Report) {
	start := time.Now()
	log := JobLogger(e.log, job, BackendLocal)
	log.Info("job started", "partitions", job.PartitionKeys(), "reason", job.ReasonText())
	var (
		res planner.Result
		rep Report
	)
	switch job.Kind {
	case planner.KindCompact:
		res, rep = e.compact(ctx, log, job)
	case planner.KindRewritePositionDeletes:
		res, rep = e.rewritePositionDeletes(ctx, log, job)
	case planner.KindSort:
		res, rep = e.sort(ctx, log, job)
	case planner.KindRewriteManifests:
		res, rep = e.rewriteManifests(ctx, log, job)
	case planner.KindExpireSnapshots:
		res, rep = e.expireSnapshots(ctx, log, job)
	case planner.KindRemoveOrphans:
		res, rep = e.removeOrphans(ctx, log, job)
	case planner.KindDeleteExpiredFiles:
		res, rep = e.deleteExpiredFiles(ctx, log, job)
	default:
		res = planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("unknown job kind %q", job.Kind)}
	}
	rep.Duration = time.Since(start)
	rep.Backend = BackendLocal
	RecordFinished(log, e.met, job, res, rep)
	return res, rep
}

// Backends a job runs on (Report.Backend, the backend attribute of a job's
// log lines and events).
const (
	BackendLocal = "local"
	BackendSpark = "spark"
)

// JobLogger returns log with the attributes every line about job carries.
func JobLogger(log *slog.Logger, job planner.Job, backend string) *slog.Logger {
	return log.With("table", job.TableName, "job_id", job.ID, "kind", job.Kind, "backend", backend)
}

// RecordFinished records a finished job, whichever backend ran it: its
// metrics and its "job finished" line with the counts.
func RecordFinished(log *slog.Logger, met *metrics.Metrics, job planner.Job, res planner.Result, rep Report) {
	met.JobDuration.WithLabelValues(string(job.Kind)).Observe(rep.Duration.Seconds())
	met.Jobs.WithLabelValues(string(job.Kind), res.Outcome.String()).Inc()
	attrs := []any{"outcome", res.Outcome.String(), "files_in", rep.RewrittenDataFiles, "files_out", rep.AddedDataFiles,
		"bytes_in", rep.RewrittenBytes, "bytes_out", rep.AddedBytes, "removed_delete_files", rep.RemovedDeleteFiles,
		"commits", rep.Commits, "attempts", rep.Attempts, "conflicts", rep.Conflicts, "duration", rep.Duration}
	switch job.Kind {
	case planner.KindRewritePositionDeletes:
		attrs = append(attrs, "delete_files_in", rep.RewrittenDeleteFiles, "delete_files_out", rep.AddedDeleteFiles,
			"delete_bytes_in", rep.RewrittenDeleteBytes, "delete_bytes_out", rep.AddedDeleteBytes,
			"dangling_delete_rows", rep.DanglingDeleteRows)
	case planner.KindRewriteManifests:
		attrs = append(attrs, "manifests_rewritten", rep.ManifestsRewritten, "manifests_added", rep.ManifestsAdded)
	case planner.KindSort:
		attrs = append(attrs, "spilled_runs", rep.SpilledRuns)
	case planner.KindExpireSnapshots:
		x := rep.Expiry
		attrs = append(attrs, "expired_snapshots", x.ExpiredSnapshots, "deleted_data_files", x.DeletedDataFiles,
			"deleted_position_delete_files", x.DeletedPositionDeleteFiles,
			"deleted_equality_delete_files", x.DeletedEqualityDeleteFiles, "deleted_manifests", x.DeletedManifests,
			"deleted_manifest_lists", x.DeletedManifestLists, "deleted_statistics_files", x.DeletedStatisticsFiles)
	}
	if job.Kind == planner.KindRemoveOrphans {
		attrs = append(attrs, "orphans", len(rep.Orphans.Orphans), "deleted_files", rep.Orphans.DeletedFiles)
	}
	switch res.Outcome {
	case planner.Succeeded, planner.Noop:
		log.Info("job finished", attrs...)
	default:
		log.Warn("job finished", append(attrs, "error", res.Err)...)
	}
}

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

// idlePartitions names the job's partitions that no planned group touches,
// with why: the planner settles them for this kind until they are written.
func idlePartitions(job planner.Job, groups []table.CompactionTaskGroup, why string) map[string]string {
	touched := map[string]bool{}
	for _, g := range groups {
		touched[g.PartitionKey] = true
	}
	var idle map[string]string
	for _, p := range job.Partitions {
		if !touched[p.Key] {
			if idle == nil {
				idle = map[string]string{}
			}
			idle[p.Key] = why
		}
	}
	return idle
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

// planGroups plans bin-pack groups over the job's partitions only. Tasks are
// selected by their exact partition tuple, never by a row filter, and their
// residual is cleared: a rewrite replaces whole files, so it must read every
// row of them (pitfall 2: a residual narrower than the file loses rows).
func planGroups(ctx context.Context, tbl *table.Table, job planner.Job) ([]table.CompactionTaskGroup, int, error) {
	want := make(map[string]bool, len(job.Partitions))
	applyDeletes := map[string]bool{}
	for _, p := range job.Partitions {
		want[p.Key] = true
		applyDeletes[p.Key] = p.ApplyDeletes
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("plan files: %w", err)
	}
	keys := planner.NewKeyer(tbl.Metadata())
	var selected, withDeletes []table.FileScanTask
	for _, t := range tasks {
		key := keys.Key(t.File.SpecID(), t.File.Partition())
		if !want[key] {
			continue
		}
		if t.Start != 0 || (t.Length != 0 && t.Length != t.File.FileSizeBytes()) {
			return nil, 0, fmt.Errorf("scan planning split %s into ranges; refusing to rewrite part of a file", t.File.FilePath())
		}
		t.Residual = iceberg.AlwaysTrue{}
		if applyDeletes[key] {
			withDeletes = append(withDeletes, t)
		} else {
			selected = append(selected, t)
		}
	}
	cfg := compaction.Config{
		TargetFileSizeBytes:  job.Settings.TargetFileSize,
		MinFileSizeBytes:     job.Settings.SmallFileSize,
		MaxFileSizeBytes:     job.Settings.MaxFileSize,
		MinInputFiles:        uint(job.Settings.MinInputFiles),
		DeleteFileThreshold:  max(job.Settings.DeleteFileThreshold, 1),
		DeleteRatioThreshold: job.Settings.DeletedRowRatio,
		PackingLookback:      compaction.DefaultPackingLookback,
	}
	if cfg.DeleteRatioThreshold <= 0 {
		cfg.DeleteRatioThreshold = compaction.DefaultDeleteRatioThreshold
	}
	// A partition over a delete threshold has every data file that any
	// delete applies to rewritten, alone if need be: the deletes can only
	// be dropped once nothing they apply to survives.
	deletesCfg := cfg
	deletesCfg.DeleteFileThreshold, deletesCfg.MinInputFiles = 1, 1
	// Small-file compaction follows the tier rule the planner scheduled
	// the partitions by (planner.SelectTiered).
	groups, skipped := tierGroups(selected, keys, job.Settings)
	for _, p := range []struct {
		cfg   compaction.Config
		tasks []table.FileScanTask
	}{{deletesCfg, withDeletes}} {
		if len(p.tasks) == 0 {
			continue
		}
		plan, err := p.cfg.PlanCompaction(p.tasks)
		if err != nil {
			return nil, 0, fmt.Errorf("plan compaction: %w", err)
		}
		skipped += plan.SkippedFiles
		for _, g := range plan.Groups {
			if rewriteChangesNothing(g.Tasks) {
				// One file, nothing applying to it: the output would be
				// the input again, and the partition would be found
				// "over its threshold" the same way after the commit.
				skipped += len(g.Tasks)
				continue
			}
			groups = append(groups, table.CompactionTaskGroup{
				// Keyed as the planner keys partitions (the log reads
				// category=a, and idle partitions are found by it).
				PartitionKey: keys.Key(g.Tasks[0].File.SpecID(), g.Tasks[0].File.Partition()),
				Tasks:        g.Tasks, TotalSizeBytes: g.TotalSizeBytes,
			})
		}
	}
	return groups, skipped, nil
}

// rewriteChangesNothing reports whether rewriting tasks as one group would
// write the same rows into one file again: a single input file that no
// delete applies to (a small file is never split, so it comes out whole).
func rewriteChangesNothing(tasks []table.FileScanTask) bool {
	if len(tasks) != 1 {
		return false
	}
	t := tasks[0]
	return len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) == 0
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
