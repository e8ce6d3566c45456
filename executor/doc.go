// Package executor runs the planner's jobs against Iceberg tables through
// iceberg-go and commits them without stepping on streaming writers: output
// files and their manifests are written once, and a commit conflict costs
// about what a writer's own commit costs — a refresh, a re-validation
// against only the snapshots committed since the last attempt (inputs
// still live, no new deletes against them) and a new manifest list —
// retried as soon as a writer has just committed, else with jittered
// exponential backoff.
//
// The top level is three rooms of jobs on one commit machinery, by file
// prefix:
//
// The executor and its commits
//
//   - executor.go: [Executor], [Options] and [New] (one constructor: the
//     catalog, logger, metrics, ownership and data-path bounds), [Run]
//     dispatching on the job kind, [Report] with its Spark-procedure
//     counts, [JobLogger], [RecordFinished]; [Progress], how far a job has
//     come, for a one-shot command's progress line; objectio's FileIO
//     linked in, and the read concurrency of a table's store.
//   - commit_loop.go: the one commit loop every job's commit goes through
//     (commitLoop: see "The commit loop" below), the lookup of a commit
//     whose outcome is unknown, and the re-plan budget of a job whose
//     commit a writer's concurrent commit made stale (replans).
//   - commit_guard.go: the commit guard (Options.Ownership's
//     CommitDeadline, package ownership), asked before every commit, and
//     [ErrCommitRefused]; [Executor.CommitObserved], the executor's own
//     entry to the "a writer just committed" signal (Options.CommitWatch,
//     package commitwatch) a retry waits on.
//   - commit_rewrite.go: a rewrite's commit through the staged snapshot
//     (package internal/commit), [ErrInputsGone], [ErrNewDeletes],
//     [ErrDiverged]; and of the tables the staged path does not take
//     (format v1 and v3), through iceberg-go's transaction re-staged per
//     attempt.
//
// Rewrites
//
//   - compact.go: bin-pack compaction and the rewrite every data rewrite
//     shares (batches of groups, commit, cleanup of its own outputs), and
//     the metadata-only commit that drops the delete files it leaves
//     applying to no live row (package internal/deadfiles finds them).
//   - compact_plan.go: the pure planning of a compaction (like iceberg-go's
//     PlanCompaction): the one selection of a job's partitions with
//     residuals cleared (selectPartitions), the tier rule's groups, groups
//     that would change nothing.
//   - sort.go: sort and z-order rewrites ([ResolveSortOrder]); one group
//     read and sorted (in memory, or by package internal/extsort).
//   - write.go: the data path every data rewrite shares: groups and their
//     units written at once under the executor's write tokens, and the
//     sorted rows written into files, several at once.
//   - posdeletes.go: the position-delete rewrite of the job's partitions, a
//     source file's rows sorted into kept and dropped, the merged files
//     written and committed; posdeletes_plan.go: the scan of the live
//     delete files and each partition's merge plan, and on format v3 the
//     rewrite into one deletion vector per data file (duplicates merged,
//     dangling vectors and Parquet position deletes removed) and
//     [ErrBadDeletionVector].
//   - convert_eqdeletes.go: the conversion of a partition's equality deletes
//     into position deletes ([ConversionCounts], [ErrEqualityFieldMissing],
//     [ErrEqualityTypeMismatch]); convert_commit.go: the equality columns
//     read by field id (package internal/eqkeys) and matched, the
//     position-delete files written and committed through the staged
//     commit, and on format v3 deletion vectors instead, merged with the
//     files' vectors.
//
// Reclaiming: expiry, orphans, deletion passes
//
//   - expire.go: snapshot expiry ([ExpiryCounts]) and the intent files its
//     deletions are recorded in ([Executor.DuePendingDeletes]).
//   - history.go: the tables' history indexes, borrowed per job, the
//     questions expiry and orphan cleanup ask them, and the files an
//     expiry unlinks.
//   - reclaim.go: the deletion rule of one pass over one table (package
//     scope's placement, the registry of known tables, the records that did
//     not verify), the deletions it refused ([Refusals]), the deletion of
//     a job's own files, and the later deletion of what an expiry
//     unlinked.
//   - output_intents.go: the output intent every rewrite records before
//     its first output, and the next look at the table that deletes the
//     unreferenced outputs of jobs that ended without their cleanup
//     ([Executor.RecoverOutputs]).
//   - orphans.go: orphan cleanup from tracked candidates or a listing
//     ([OrphanReport]); orphans_guard.go: the check of every candidate
//     before its deletion (references, age, canonical location).
//
// Metadata
//
//   - manifests.go: the manifest rewrite.
//
// Pure leaves live under internal/: internal/commit (the staged snapshot,
// its validation, pruning and summary), internal/datapath (reactor's
// Parquet writer, the one codec list and the one counting writer, also for
// position-delete files), internal/extsort (the external merge sort),
// internal/deadfiles (the delete files that provably apply to no live
// row) and internal/eqkeys (equality columns read by field id, encoded as
// keys).
// The job pool, which orders and bounds running jobs, is package
// executor/pool.
//
// # The commit loop
//
// Every commit goes through commitLoop.run (commit_loop.go), iceberg-go's
// doCommit with reactor's rules: it asks the commit guard, loads the
// table per attempt (the first may be handed one), counts attempts,
// retries lost races after the next observed writer commit or a jittered
// backoff within commit_retry_time, deletes a lost attempt's own files,
// looks up a commit whose outcome is unknown before anything is retried
// or deleted, and deletes the files written once for all attempts when it
// ends without a commit (never when the outcome is unknown). A job gives
// only its attempt body (attemptBody): plan, write and validate on the
// table it is handed, then commit; it returns the committed table, nil
// when there is nothing to commit, lost(...) for a failed catalog commit
// (the attempt's own files, how to look the commit up), or an error that
// ends the loop. docs/design.md#commit-loop has the rest.
//
// It owns every write reactor makes to a table and the clean-up of its own
// failed attempts. It must not decide what to compact or how urgent a job
// is (that is the planner's) or read events (the triggers').
package executor
