// Package planner owns reactor's picture of each table and the decision of
// which job it needs now: per-partition counters kept current by reading
// only the manifests each new snapshot added, the thresholds measured
// against them, and the one picker that turns them into a job — one at a
// time per table, in the order of docs/design.md#job-order.
//
// The jobs it schedules are package jobs' vocabulary (Job, Partition,
// Reason, Result; the kinds in package jobkind), shared with every other
// layer; nothing imports the planner for them.
//
// It reads table metadata and manifests through iceberg-go but never writes
// to a table: running jobs is the executor's business, receiving events the
// triggers'.
//
// # Map
//
// A commit event's way through the package, then the rest:
//
//  1. refresh.go: [Planner.CheckCommit] and [Planner.CommitCovered] answer
//     without I/O (another catalog's event, a duplicate); [Planner.Refresh]
//     loads the table once for every event that arrived before it.
//     [Planner.Apply] is the three in a row.
//  2. planner.go: [New], [Options], the per-table state (tableState) and
//     [Planner.Observe], which advances the counters and evaluates; the
//     wake-up [Timer] (Options.AfterFunc for a test's clock);
//     [Planner.Forget] drops the tables this replica no longer owns
//     (Options.Ownership).
//  3. state.go, snapshots.go, counters.go, compact.go: the
//     table's counters, advanced snapshot by snapshot from the manifests
//     each one added (rebuilt from the current snapshot when the gap cannot
//     be bridged): [Counters] per partition — data files, bytes, rows, small
//     files per size tier (jobs.TierCounts), delete files and rows of each
//     kind, sorted files, last write; the snapshot summary expiry is decided
//     from (snapshotSummary.expiry), and a run of append snapshots (a
//     burst's) applied from the newest one's manifest list alone
//     (advanceAppends, snapshots.go); counters.go also follows each data
//     file's live deletion vectors (dvRefs), so a dangling or duplicate
//     vector is counted;
//     compact.go holds the memory-compact forms (partition tuples, instants,
//     hash sets) an idle table is kept in. offloaded.go marks the snapshots
//     reactor committed through Spark as its own (package deletions keeps
//     them).
//  4. evaluate.go: evaluateLocked gathers the table's live state under its
//     lock, asks the picker, and applies the decision: it starts the job
//     (scheduleLocked: an id, the table's running job, Options.Dispatch) or
//     arms the table's timer for the earliest deadline instead of polling.
//  5. pick.go: the picker, pick(view, environment, now), pure like
//     iceberg-go's PlanCompaction: from the table's view (counters with
//     each partition's scheduling state, history, settings) and its
//     environment (the running job, the table-wide jobs' state, tracked
//     files) to a decision — the job to start, those due behind it, what
//     is held and why, when to look again. The partition jobs — compact
//     (small files by tier, deleted rows), convert_equality_deletes
//     (equality delete files), rewrite_position_deletes (position delete
//     files and deletion vectors), sort (sort cadence) — need a partition
//     free to run (quiet period, max_quiet_wait, cool-down, settled); the
//     table-wide ones come from tablewide.go; metadata over its bounds
//     goes first. checks.go measures each threshold (partitionDue,
//     tierCheck: a partition is over exactly when the executor's planning,
//     which selects with the same jobs.Tiers, finds a merge; manifestCheck
//     and its floor of one manifest per partition).
//  6. tablewide.go: the table-wide jobs' state, one struct per kind with
//     its due and finished methods: expiry (by age and by snapshot_count)
//     with the deferred deletion pass of what it unlinked, the manifest
//     rewrite, orphan cleanup.
//  7. quiet.go: the quiet merge — once a partition has had no commit for
//     compact_when_quiet_after and a merge at the target size would reduce
//     its files ([QuietMerge]), one compaction of all its small files, once
//     per quiet spell, armed on the table's wake-up timer like every other
//     deadline.
//  8. finished.go: [Planner.Finished] applies cool-downs, settles
//     partitions a job found nothing to do in, records the state of what
//     the job committed, and picks again.
//
// The same decision for people:
//
//   - explain.go: [Explain] is the picker's decision for `reactor plan`,
//     per threshold ([Check], [Plan]), for a reactor that has just started,
//     saying what it cannot know ([Plan].Unknown: cool-downs unknown in
//     plan); [Planner.Explain] is the same with what this planner holds of
//     the table's jobs (the status page's table view); [Planner.Outlook]
//     is the picker's decision over the state the planner holds, no I/O
//     (the status page's /), and [Planner.Tables] the tables it holds.
//   - health.go: [Health], the per-table report after every job and on
//     demand ([CheckHealth] for `reactor health`).
//   - manual.go: [ManualJob] builds the job of a one-shot command (`reactor
//     compact`, `expire`, ...) from the same thresholds.
//
// For other layers:
//
//   - intake.go: [Planner.NearThreshold], a table with a partition at
//     least half way to a threshold, which the triggers give a fast lane;
//     [Planner.PollTargets], the owned tables the polling safety net checks
//     against the catalog's current metadata location.
//   - locations.go, objects.go: notification routing — the location index
//     from table locations to tables, built from the catalog for the
//     watched namespaces ([Planner.Discover] brings their tables in at
//     start) and refreshed on a schedule and on a miss under a
//     watched warehouse prefix ([ErrUnclaimed]: a new table's first objects
//     are held, not dropped); [Planner.RouteObject] and
//     [Planner.ApplyObject] turn an object event into a commit (a new
//     metadata file), a tracked unconfirmed data file, or a removal;
//     [Planner.OrphanCandidates] lists tracked files no snapshot came to
//     reference, checked against every location the table's history
//     references; which files are never orphan candidates is
//     jobs.HiddenPath.
package planner
