// Package executor runs the planner's jobs against Iceberg tables through
// iceberg-go and commits them without stepping on streaming writers: output
// files and their manifests are written once, and a commit conflict costs
// about what a writer's own commit costs — a refresh, a re-validation
// against only the snapshots committed since the last attempt (inputs
// still live, no new deletes against them) and a new manifest list —
// retried as soon as a writer has just committed, else with jittered
// exponential backoff.
//
// The top level holds the jobs and the commit machinery, by file prefix:
//
//   - executor.go: [Executor], [Options] and [New] (one constructor: the
//     catalog, logger, metrics, commit guard and data-path bounds), [Run]
//     dispatching on the job kind, [Report] with its Spark-procedure
//     counts, [JobLogger], [RecordFinished].
//   - compact.go: bin-pack compaction and the rewrite every data rewrite
//     shares (batches of groups, commit, cleanup of its own outputs); the
//     groups written at once under the executor's write tokens.
//   - compact_plan.go: the pure planning of a compaction (like iceberg-go's
//     PlanCompaction): groups by exact partition tuple with residuals
//     cleared, the tier rule's groups, groups that would change nothing.
//   - compact_deaddeletes.go: delete files that provably apply to no live
//     row, dropped in a metadata-only commit.
//   - commit_staged.go: a rewrite's commit through the staged snapshot
//     (package internal/commit), attempt by attempt; [ErrInputsGone],
//     [ErrNewDeletes], [ErrDiverged].
//   - replan.go: a rewrite lost to a writer's new deletes against its
//     inputs (ErrNewDeletes) planned again, at most twice, then GaveUp;
//     the conversion's re-plan after ErrInputsGone shares the loop.
//   - commit_replay.go: the commit of tables the staged path does not take
//     (format v1 and v3), through iceberg-go's transaction re-staged per
//     attempt.
//   - commit_retry.go: the retry loop (budget, backoff, a retry right after
//     a writer's commit: Options.CommitWatch, package commitwatch, or
//     [Executor.CommitObserved]); the commit guard
//     (Options.Ownership's CommitDeadline, package ownership), asked
//     before every commit, and [ErrCommitRefused].
//   - expire.go: snapshot expiry ([ExpiryCounts]); expire_delete.go: the
//     later deletion of what it unlinked; expire_intents.go: the intent files those
//     deletions are recorded in ([Executor.DuePendingDeletes]);
//     expire_unlinked.go: the files an expiry unlinks.
//   - output_intents.go: the output intent every rewrite records before
//     its first output, and the next look at the table that deletes the
//     unreferenced outputs of jobs that ended without their cleanup
//     ([Executor.RecoverOutputs]).
//   - orphans.go: orphan cleanup from tracked candidates or a listing
//     ([OrphanReport]); orphans_guard.go: the check of every candidate
//     before its deletion (references, age, canonical location).
//   - convert_eqdeletes.go: the conversion of a partition's equality deletes
//     into position deletes ([ConversionCounts], [ErrEqualityFieldMissing],
//     [ErrEqualityTypeMismatch]); convert_match.go: the equality columns
//     read by field id and matched; convert_commit.go: the position-delete
//     files written and committed through the staged commit; convert_dv.go:
//     on format v3, deletion vectors instead, merged with the files'
//     vectors.
//   - posdeletes.go: the position-delete rewrite of the job's partitions,
//     and a source file's rows sorted into kept and dropped;
//     posdeletes_plan.go: the scan of the live delete files and each
//     partition's merge plan; posdeletes_commit.go: the merged files written and
//     committed; posdeletes_dv.go: on format v3, the rewrite into one
//     deletion vector per data file (duplicates merged, dangling vectors
//     and Parquet position deletes removed) and [ErrBadDeletionVector].
//   - sort.go: sort and z-order rewrites ([ResolveSortOrder]); sort_group.go:
//     one group read and sorted (in memory, or by package internal/extsort);
//     sort_sink.go: the sorted rows written into files, several at once.
//   - manifests.go: the manifest rewrite.
//   - history.go: the tables' history indexes, borrowed per job, and the
//     questions expiry and orphan cleanup ask them.
//   - reclaim.go: the deletion rule of one pass over one table (package
//     scope's placement, the registry of known tables, the records that did
//     not verify) and the deletions it refused ([Refusals]).
//   - progress.go: [Progress], how far a job has come, for a one-shot
//     command's progress line.
//   - objectstore.go: objectio's FileIO linked in, and the read concurrency
//     of a table's store.
//
// Pure leaves live under internal/: internal/commit (the staged snapshot,
// its validation, pruning and summary), internal/datapath (reactor's
// Parquet writer, the one codec list and the one counting writer, also for
// position-delete files) and internal/extsort (the external merge sort).
// The job pool, which orders and bounds running jobs, is package
// executor/pool.
//
// It owns every write reactor makes to a table and the clean-up of its own
// failed attempts. It must not decide what to compact or how urgent a job
// is (that is the planner's) or read events (the triggers').
package executor
