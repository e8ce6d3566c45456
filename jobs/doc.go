// Package jobs is the vocabulary every layer of reactor shares about a
// maintenance job: the [Job] the planner schedules and the executor, the
// pool, the Spark backend and the status pages read; the [Partition] and
// [Reason] it names; the [Result] and [Outcome] it reports; and the pure
// rules both the planner and the executor apply, so they agree by
// construction.
//
// # Map
//
//   - job.go: [Job], [Partition], [OrphanCandidate], the orphan sources and
//     the snapshot properties that mark reactor's own commits
//     ([SnapshotJobProperty], [SortSnapshotProperty]).
//   - reason.go: [Threshold] names as constants, [Reason] and its words
//     ("category=a: 12 small files, threshold 5"), [PriorityOf].
//   - result.go: [Outcome] and [Result].
//   - keyer.go: [Keyer], the stable readable partition keys
//     ("category=books") the planner, the executor and the staged commit
//     key files by.
//   - tiers.go: the tier rule ([Tiers], [Tiers.Select]) that picks the
//     merge a partition's small files are due, as iceberg-go's
//     compaction.Config.PlanCompaction picks bin-pack groups: a pure
//     function of sizes and settings.
//   - hidden.go: [HiddenPath], the files never orphan candidates.
//
// The job kinds are package jobkind, a leaf below this one: a Job carries
// its table's resolved settings (thresholds.Effective), and package
// thresholds validates the kinds the spark rules name, so the kinds sit
// below thresholds and the Job above it, with no import cycle.
//
// It holds no state and does no I/O beyond what a Keyer reads from the
// metadata it is given. It must not decide when a job is due (package
// planner) or run one (package executor).
package jobs
