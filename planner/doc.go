// Package planner owns reactor's picture of each table and the decision of
// which job it needs now: per-partition counters kept current by reading
// only the manifests each new snapshot added, the thresholds measured
// against them, and the jobs scheduled from them — one at a time per
// table, in the order of docs/design.md#job-order.
//
// The jobs it schedules are package jobs' vocabulary (Job, Partition,
// Reason, Result; the kinds in package jobkind), shared with every other
// layer; nothing imports the planner for them.
//
// It reads table metadata and manifests through iceberg-go but never writes
// to a table: running jobs is the executor's business, receiving events the
// triggers'.
//
// # Parts
//
//   - The planner and its event path (planner.go, refresh.go): [New],
//     [Planner.Apply] for a commit event, and the same split so a consumer
//     can coalesce a burst — [Planner.CheckCommit] and
//     [Planner.CommitCovered] answer without I/O, [Planner.Refresh] loads
//     the table once for every event that arrived before it. [Planner.Observe]
//     brings a table in without an event, [Planner.Discover] every table of
//     the watched namespaces (at start), and [Planner.Forget] drops the
//     tables this replica no longer owns.
//   - Table state (state.go, snapshots.go, counters.go, compact.go,
//     dvrefs.go): a table's counters advanced snapshot by snapshot from the
//     manifests each one added (rebuilt from the current snapshot when the
//     gap cannot be bridged); [Counters] per partition — data files, bytes,
//     rows, small files per size tier (jobs.TierCounts), delete files and rows
//     of each kind, sorted files, last write; the snapshot summary expiry is
//     scheduled from; compact.go holds the memory-compact forms (partition
//     tuples, instants, hash sets) an idle table is kept in; dvrefs.go
//     follows each data file's live deletion vectors, so a dangling or
//     duplicate vector is counted. offloaded.go marks the snapshots reactor
//     committed through Spark as its own (package deletions keeps them).
//   - Evaluation and scheduling (evaluate.go, explain.go, manifests.go):
//     which partitions are over a threshold, for which of the partition
//     jobs — compact (small files by tier, deleted rows),
//     convert_equality_deletes (equality delete files),
//     rewrite_position_deletes (position delete files and deletion vectors),
//     sort (sort cadence) — and free to run (quiet period,
//     max_quiet_wait, cool-down, settled), the table-wide jobs (expiry by
//     age and by snapshot_count, the deferred deletion pass, the manifest
//     rewrite and its floor of one manifest per partition, orphan cleanup),
//     metadata over its bounds first, and a timer for the next deadline
//     instead of polling. [Explain] is the same evaluation for
//     `reactor plan`, per threshold ([Check], [Plan]); [Planner.Outlook]
//     (outlook.go) is Explain over the state the planner already holds, for
//     the status pages ([Planner.Tables]).
//   - Hot tables (hot.go): [Planner.NearThreshold], a table with a partition
//     at least half way to a threshold, which the triggers give a fast lane.
//   - Polling (poll.go): [Planner.PollTargets], the owned tables the polling
//     safety net checks against the catalog's current metadata location.
//   - Tiers (tiers.go): tierCheck, the due rule of the tier rule
//     (jobs.Tiers): a partition is over exactly when the executor's
//     planning, which selects with the same jobs.Tiers, finds a merge.
//   - The quiet merge (quiet.go): once a partition has had no commit for
//     compact_when_quiet_after and a merge at the target size would reduce
//     its files ([QuietMerge]), one compaction of all its small files, once
//     per quiet spell, armed on the table's wake-up timer like every other
//     deadline (clock.go: [Timer], and Options.AfterFunc for a test's
//     clock).
//   - Finished jobs (finished.go): [Planner.Finished] applies cool-downs,
//     settles partitions a job found nothing to do in, and records the
//     state of what the job committed.
//   - Manual jobs (manual.go): [ManualJob] builds the job of a one-shot
//     command (`reactor compact`, `expire`, ...) from the same thresholds.
//   - Notification routing (locations.go, objects.go): the location index
//     from table locations to tables, built from the catalog for the watched
//     namespaces and refreshed on a schedule and on a miss under a watched
//     warehouse prefix ([ErrUnclaimed]: a new table's first objects are held,
//     not dropped); [Planner.RouteObject] and [Planner.ApplyObject] turn an
//     object event into a commit (a new metadata file), a tracked
//     unconfirmed data file, or a removal; [Planner.OrphanCandidates] lists
//     tracked files no snapshot came to reference.
//   - Orphan hygiene (history.go): the locations a table's history
//     references; which files are never orphan candidates is
//     jobs.HiddenPath.
//   - Health (health.go): [Health], the per-table report after every job
//     and on demand ([CheckHealth] for `reactor health`).
package planner
