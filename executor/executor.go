package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/commitwatch"
	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/objectio"
	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/scope"
)

// errUnknownCommitState marks a commit whose outcome the catalog did not
// tell: its outputs must not be deleted, since a snapshot may reference them.
var errUnknownCommitState = errors.New("commit outcome unknown")

// Executor runs jobs.
type Executor struct {
	cat catalog.Catalog
	log *slog.Logger
	met *metrics.Metrics
	// watch hears of writers' commits (Options.CommitWatch): a commit
	// retry after a lost race waits on it.
	watch *commitwatch.Watch
	// replayCommits sends every data rewrite through commitBatchReplay
	// (benchmarks compare the two paths).
	replayCommits bool
	// guard, when set, is asked before every commit (Options.Ownership).
	guard ownership.Tables
	// referenceMaxAge: see the constant (tests set 0: re-read before
	// every delete).
	referenceMaxAge time.Duration
	opts            Options
	// tokens bound the output files written at once (compact.go);
	// sortSlot the groups sorted at once (one: sort_memory is per group).
	tokens   tokens
	sortSlot tokens
	// hist are the tables' history indexes (history.go); nil: every
	// question walks the whole history.
	hist *histories
	// live are this process's jobs with an output intent
	// (output_intents.go): never recovered while they run.
	live liveJobs
	// crash, set by tests only, makes a rewrite stop at the named point
	// as a killed process would: nothing after it runs, no cleanup.
	crash func(point string) bool
	// keys sign and verify reactor's records in tables' storage.
	keys *deletions.Keyring
	// registry: the tables the deletion rule knows (reclaim.go).
	registry registry
	// refusedRecords are the records this process has refused already.
	refusedRecords seenOnce
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
	// Conflicts counts the commit attempts lost to a concurrent commit,
	// and the re-plans after a writer's deletes against a rewrite's inputs.
	Conflicts int
	// RetriesAfterCommit counts the retries that went right after an
	// observed writer commit rather than at the end of their backoff.
	RetriesAfterCommit    int
	FailedBatches         int
	SkippedFiles          int
	PlannedFromSnapshotID int64
	CommittedSnapshotID   int64
	ManifestsRewritten    int
	ManifestsAdded        int
	Expiry                ExpiryCounts
	Orphans               OrphanReport
	// Refusals are the files the deletion rule kept and the records it
	// refused (expiry, the deletion pass, orphans, recovered outputs).
	Refusals                Refusals
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
	// Conversion: what a convert_equality_deletes job did.
	Conversion ConversionCounts
	// DryRun reports are what the job would have done.
	DryRun bool
	// Backend is where the job ran: BackendLocal or BackendSpark.
	Backend string
}

// Run executes job and reports how it ended. It never panics on bad input
// and never leaves its own output files behind when it does not commit them.
func (e *Executor) Run(ctx context.Context, job jobs.Job) (jobs.Result, Report) {
	start := time.Now()
	log := JobLogger(e.log, job, BackendLocal)
	log.Info("job started", "partitions", job.PartitionKeys(), "reason", job.ReasonText())
	var (
		res jobs.Result
		rep Report
	)
	switch job.Kind {
	case jobkind.Compact:
		res, rep = e.compact(ctx, log, job)
	case jobkind.RewritePositionDeletes:
		res, rep = e.rewritePositionDeletes(ctx, log, job)
	case jobkind.ConvertEqualityDeletes:
		res, rep = e.convertEqualityDeletes(ctx, log, job)
	case jobkind.Sort:
		res, rep = e.sort(ctx, log, job)
	case jobkind.RewriteManifests:
		res, rep = e.rewriteManifests(ctx, log, job)
	case jobkind.ExpireSnapshots:
		res, rep = e.expireSnapshots(ctx, log, job)
	case jobkind.RemoveOrphans:
		res, rep = e.removeOrphans(ctx, log, job)
	case jobkind.DeleteExpiredFiles:
		res, rep = e.deleteExpiredFiles(ctx, log, job)
	default:
		res = jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("unknown job kind %q", job.Kind)}
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
func JobLogger(log *slog.Logger, job jobs.Job, backend string) *slog.Logger {
	return log.With("table", job.Table.String(), "job_id", job.ID, "kind", job.Kind, "backend", backend)
}

// RecordFinished records a finished job, whichever backend ran it: its
// metrics and its "job finished" line with the counts.
func RecordFinished(log *slog.Logger, met *metrics.Metrics, job jobs.Job, res jobs.Result, rep Report) {
	met.JobDuration.WithLabelValues(job.Kind.String()).Observe(rep.Duration.Seconds())
	met.Jobs.WithLabelValues(job.Kind.String(), res.Outcome.String()).Inc()
	attrs := []any{"outcome", res.Outcome.String(), "files_in", rep.RewrittenDataFiles, "files_out", rep.AddedDataFiles,
		"bytes_in", rep.RewrittenBytes, "bytes_out", rep.AddedBytes, "removed_delete_files", rep.RemovedDeleteFiles,
		"commits", rep.Commits, "attempts", rep.Attempts, "conflicts", rep.Conflicts, "duration", rep.Duration}
	switch job.Kind {
	case jobkind.RewritePositionDeletes:
		attrs = append(attrs, "delete_files_in", rep.RewrittenDeleteFiles, "delete_files_out", rep.AddedDeleteFiles,
			"delete_bytes_in", rep.RewrittenDeleteBytes, "delete_bytes_out", rep.AddedDeleteBytes,
			"dangling_delete_rows", rep.DanglingDeleteRows)
	case jobkind.ConvertEqualityDeletes:
		c := rep.Conversion
		attrs = append(attrs, "equality_delete_files_removed", c.EqualityDeleteFilesRemoved,
			"position_delete_files_added", c.PositionDeleteFilesAdded, "rows_matched", c.RowsMatched,
			"data_files_scanned", c.DataFilesScanned, "bytes_read", c.BytesRead)
	case jobkind.RewriteManifests:
		attrs = append(attrs, "manifests_rewritten", rep.ManifestsRewritten, "manifests_added", rep.ManifestsAdded)
	case jobkind.Sort:
		attrs = append(attrs, "spilled_runs", rep.SpilledRuns)
	case jobkind.ExpireSnapshots:
		x := rep.Expiry
		attrs = append(attrs, "expired_snapshots", x.ExpiredSnapshots, "deleted_data_files", x.DeletedDataFiles,
			"deleted_position_delete_files", x.DeletedPositionDeleteFiles,
			"deleted_equality_delete_files", x.DeletedEqualityDeleteFiles, "deleted_manifests", x.DeletedManifests,
			"deleted_manifest_lists", x.DeletedManifestLists, "deleted_statistics_files", x.DeletedStatisticsFiles)
	}
	if job.Kind == jobkind.RemoveOrphans {
		attrs = append(attrs, "orphans", len(rep.Orphans.Orphans), "deleted_files", rep.Orphans.DeletedFiles)
	}
	switch res.Outcome {
	case jobs.Succeeded, jobs.Noop:
		log.Info("job finished", attrs...)
	default:
		log.Warn("job finished", append(attrs, "error", res.Err)...)
	}
}

// Count is one named result count.
type Count struct {
	Name  string
	Value int64
}

// ProcedureCounts returns the report as the result columns of the Spark
// procedure equivalent to the job's kind, in the procedure's order, so that
// reactor's numbers read like the ones users compare them with
// (rewrite_data_files, expire_snapshots, remove_orphan_files,
// rewrite_manifests).
func (r Report) ProcedureCounts(kind jobkind.Kind) []Count {
	switch kind {
	case jobkind.Compact, jobkind.Sort:
		return []Count{
			{"rewritten_data_files_count", int64(r.RewrittenDataFiles)},
			{"added_data_files_count", int64(r.AddedDataFiles)},
			{"rewritten_bytes_count", r.RewrittenBytes},
			{"failed_data_files_count", int64(r.FailedDataFiles)},
			{"removed_delete_files_count", int64(r.RemovedDeleteFiles)},
		}
	case jobkind.RewritePositionDeletes:
		return []Count{
			{"rewritten_delete_files_count", int64(r.RewrittenDeleteFiles)},
			{"added_delete_files_count", int64(r.AddedDeleteFiles)},
			{"rewritten_bytes_count", r.RewrittenDeleteBytes},
			{"added_bytes_count", r.AddedDeleteBytes},
			{"dangling_deletes_removed_count", r.DanglingDeleteRows},
		}
	case jobkind.ConvertEqualityDeletes:
		c := r.Conversion
		return []Count{
			{"removed_equality_delete_files_count", int64(c.EqualityDeleteFilesRemoved)},
			{"added_position_delete_files_count", int64(c.PositionDeleteFilesAdded)},
			{"matched_rows_count", c.RowsMatched},
			{"scanned_data_files_count", int64(c.DataFilesScanned)},
			{"read_bytes_count", c.BytesRead},
		}
	case jobkind.ExpireSnapshots:
		// Files expiry unlinks are deleted min_reader_margin later, by the
		// delete_expired_files pass that reports them: here they are
		// deferred, not deleted (unless the margin is zero).
		x := r.Expiry
		deferred := int64(0)
		if x.Deferred {
			deferred, x = int64(x.Files()), ExpiryCounts{ExpiredSnapshots: x.ExpiredSnapshots}
		}
		return append(expiryCounts(x), Count{"expired_snapshots_count", int64(x.ExpiredSnapshots)},
			Count{"deletion_deferred_files_count", deferred})
	case jobkind.RemoveOrphans:
		return []Count{
			{"orphan_files_count", int64(len(r.Orphans.Orphans))},
			{"orphan_bytes_count", r.Orphans.OrphanBytes},
			{"deleted_files_count", int64(r.Orphans.DeletedFiles)},
			// reactor's own: candidates kept because the history
			// references them, the store says they are younger than the
			// margin, or they were refused (see reactor_orphans_refused_total).
			{"still_referenced_files_count", int64(r.Orphans.StillReferenced)},
			{"too_young_files_count", int64(r.Orphans.TooYoung)},
			{"refused_files_count", int64(r.Orphans.RefusedFiles)},
		}
	case jobkind.DeleteExpiredFiles:
		return append(expiryCounts(r.Expiry), Count{"still_referenced_files_count", int64(r.Orphans.StillReferenced)})
	case jobkind.RewriteManifests:
		return []Count{
			{"rewritten_manifests_count", int64(r.ManifestsRewritten)},
			{"added_manifests_count", int64(r.ManifestsAdded)},
		}
	}
	return nil
}

// CountMap is ProcedureCounts keyed by name (for JSON).
func (r Report) CountMap(kind jobkind.Kind) map[string]int64 {
	counts := r.ProcedureCounts(kind)
	m := make(map[string]int64, len(counts))
	for _, c := range counts {
		m[c.Name] = c.Value
	}
	return m
}

// expiryCounts are expire_snapshots' deleted-file columns.
func expiryCounts(x ExpiryCounts) []Count {
	return []Count{
		{"deleted_data_files_count", int64(x.DeletedDataFiles)},
		{"deleted_position_delete_files_count", int64(x.DeletedPositionDeleteFiles)},
		{"deleted_equality_delete_files_count", int64(x.DeletedEqualityDeleteFiles)},
		{"deleted_manifest_files_count", int64(x.DeletedManifests)},
		{"deleted_manifest_lists_count", int64(x.DeletedManifestLists)},
		{"deleted_statistics_files_count", int64(x.DeletedStatisticsFiles)},
	}
}

// Options are what an executor is built from; only Catalog is required.
type Options struct {
	// Catalog is where the executor loads tables and commits.
	Catalog catalog.Catalog
	// Logger and Metrics receive the jobs' lines and counts (nil: the
	// default logger, a fresh set of metrics).
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	// Ownership, when set, is asked before every commit (its
	// CommitDeadline, the commit-time fence; the executor asks nothing
	// else of it): at the start of every attempt of the commit retry
	// loop, and in the catalog's CommitTable itself (through the tables
	// the executor loads), whose context then ends when the permission
	// could (commit_guard.go). Nil: a one-shot command, no lease.
	Ownership ownership.Tables
	// CommitWatch, when set, is where the executor hears that a writer
	// just committed to a table: a commit that lost a race retries then
	// (commit_loop.go). reactor run hands the same Watch to the triggers,
	// which observe the commits. Nil: one of its own, fed through
	// CommitObserved.
	CommitWatch *commitwatch.Watch
	// Concurrency bounds the output files written at once across every
	// job of the executor (reactor run's concurrency); 0 means 1.
	Concurrency int
	// SortMemory is the memory budget of one sort group (sort_memory;
	// 0: thresholds.DefaultSortMemory); SpillDir is where a group larger
	// than a third of it spills its sorted runs (spill_dir; empty:
	// reactor-spill under the system's temporary directory). New
	// creates SpillDir and checks it can write there.
	SortMemory int64
	SpillDir   string
	// HistoryBytes bounds the memory of the tables' history indexes,
	// which let expiry and orphan cleanup read only what changed since
	// they last looked (0: 512 MiB; negative: no indexes, every job walks
	// the table's whole history).
	HistoryBytes int64
	// Progress, when set, hears how far each job has come (a one-shot
	// command's terminal line; see Progress).
	Progress Progress
	// Records signs the records the executor keeps in tables' storage
	// and verifies those it reads (nil: a key of this process alone, so
	// another process refuses what it writes).
	Records *deletions.Keyring
	// Tables is the registry of tables the deletion rule asks whether
	// another table claims a file (reactor run's, filled by its planner;
	// the executor waits for it to be ready). Nil: the executor lists the
	// catalog itself before a deletion pass, bounded by DeletionScope.
	Tables        *scope.Known
	DeletionScope []string

	// icebergWriter writes every group through iceberg-go's
	// ExecuteCompactionGroup, one group at a time (tests compare the two
	// paths).
	icebergWriter bool
	// poisonFreed makes the job pools poison what Arrow frees (tests).
	poisonFreed bool
}

// New creates an executor from o. It fails on options out of range and on
// a SpillDir it cannot write to: a sort that finds out only when its group
// outgrows memory fails hours later.
func New(o Options) (*Executor, error) {
	if o.Concurrency < 0 {
		return nil, errors.New("executor: concurrency must not be negative")
	}
	if o.SortMemory < 0 {
		return nil, errors.New("executor: sort memory must not be negative")
	}
	if o.SpillDir != "" {
		if err := usableSpillDir(o.SpillDir); err != nil {
			return nil, err
		}
	}
	e := &Executor{cat: o.Catalog, log: o.Logger, met: o.Metrics, referenceMaxAge: referenceMaxAge, opts: o,
		tokens: newTokens(o.Concurrency), sortSlot: newTokens(1)}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.met == nil {
		e.met = metrics.New()
	}
	// Tables' vended storage credentials renewed mid-job (objectio).
	e.cat = objectio.RenewingCatalog(e.cat, e.log, func(reason string) { e.met.CredentialRenewals.WithLabelValues(reason).Inc() })
	switch {
	case o.HistoryBytes < 0:
		e.hist = nil
	case o.HistoryBytes == 0:
		e.hist = newHistories(defaultHistoryBytes)
	default:
		e.hist = newHistories(o.HistoryBytes)
	}
	if e.watch = o.CommitWatch; e.watch == nil {
		e.watch = &commitwatch.Watch{}
	}
	if o.Ownership != nil {
		e.guardWith(o.Ownership)
	}
	e.keys = o.Records
	if e.keys == nil {
		e.keys = deletions.EphemeralKeyring()
	}
	e.registry.known = o.Tables
	if e.registry.known == nil {
		known, err := scope.NewKnown(o.DeletionScope...)
		if err != nil {
			return nil, fmt.Errorf("executor: %w", err)
		}
		e.registry.known, e.registry.own = known, true
	}
	return e, nil
}

// usableSpillDir creates dir if need be and checks a file can be written
// there: a sort that finds out only when its group outgrows memory fails
// hours later.
func usableSpillDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("executor: spill_dir %q must be an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("executor: spill_dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".reactor-write-check-*")
	if err != nil {
		return fmt.Errorf("executor: spill_dir %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Progress of a long job, for a one-shot command's terminal line.

// Progress hears how far a job has come. A one-shot command on a big table
// runs for minutes, and a terminal with no sign of life looks hung; reactor
// run's jobs log a line per group instead and pass no Progress. Calls come
// from the job's goroutines at once, so an implementation must be safe for
// concurrent use, and cheap: the data path calls it once per output unit.
type Progress interface {
	// Phase starts a step of the job: what it does ("rewrite",
	// "delete", "check"), and how many files and bytes it will go
	// through (0 when not known in advance).
	Phase(name string, files, bytes int64)
	// Advance adds files and bytes the current step has finished.
	Advance(files, bytes int64)
}

func (e *Executor) phase(name string, files, bytes int64) {
	if e.opts.Progress != nil {
		e.opts.Progress.Phase(name, files, bytes)
	}
}

func (e *Executor) advance(files, bytes int64) {
	if e.opts.Progress != nil {
		e.opts.Progress.Advance(files, bytes)
	}
}

// Tables on s3:// are read and written through objectio's FileIO, which
// registers itself for those schemes in place of iceberg-go's: one GET per
// small file, a connection pool shared across the FileIOs iceberg-go
// builds per scan and commit, and a read concurrency of its own
// (datapath.Scan, storeConcurrency).

// storeConcurrency is how many manifests a history sync reads, or files
// expiry deletes, at once on fs: the object store's read concurrency
// (each is a round trip), or 0 on a local warehouse (the history index's
// default of 4 readers; deletions one at a time).
func storeConcurrency(fs iceio.IO) int { return objectio.ReadConcurrency(fs) }
