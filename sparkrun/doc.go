// Package sparkrun runs reactor's jobs on a Spark cluster through Spark
// Connect: reactor decides, Spark executes. It owns the offload policy's
// application to one job ([Decide]: which backend, and why), the Spark
// Connect session of a job (the Go client github.com/apache/spark-connect-go,
// with the job's operation tag, Interrupt and ReleaseSession on top of it),
// the execution of sparkcall's rendering of the job, its timeout and
// interruption, and the mapping of the procedures' result columns to the
// job's [executor.Report], so a Spark job has the same events, metrics and
// log lines as a local one (with backend spark).
//
// Safety across the boundary: the [Runner] returns only once Spark no
// longer runs the job (it finished, failed, or was interrupted and its end
// confirmed, or Spark stayed unreachable for interrupt_grace), so the
// planner's one job per table holds for Spark jobs too; a job sparkcall
// cannot express faithfully runs locally; a job never runs on both.
//
// It must not decide what to run or when (the planner does), must not
// render statements itself (sparkcall does), and must not commit to the
// table: Spark commits, and Spark retries its own commit conflicts.
//
// # Files
//
//   - route.go: [Decide], the spark rules applied to one job ([Decision]).
//   - run.go: the [Runner]: a job's statements, its timeout, interruption
//     and the confirmation of its end, the local fallback.
//   - connect.go: the Spark Connect [Session] and [Dialer] ([Dial]), with
//     Interrupt and ReleaseSession sent through the client's connection.
//   - results.go: the procedures' result columns into the job's report, and
//     how a statement ended.
//   - own_snapshots.go: the snapshots Spark committed for a job, recorded in
//     the table's storage (package deletions) so that the planner counts them
//     as reactor's own, not as a writer's commits.
package sparkrun
