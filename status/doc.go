// Package status serves reactor's status pages on the worker's HTTP
// address, beside /metrics: what a newcomer or an operator looks at to see
// what reactor holds and does, rendered on the server with html/template.
//
//   - source.go: [Source], the read-only view of a running worker the pages
//     are built from (package worker implements it), and the [Job] and
//     [Inspection] values it hands over.
//   - handler.go: [Handler] and its routes — / (every table: health, files
//     against the ideal count, small and delete files, snapshots, the last
//     job, the job running or queued and why), /tables/<namespace.table>
//     (partitions and their counters, recent jobs, what `reactor plan` would
//     say, pending deletions, the lease owner) and /jobs (running, queued,
//     recent jobs and failures); GET and HEAD only.
//   - view.go: the values the templates render, copied from the Source;
//     outlook.go the planner's outlook of a table with no job queued or
//     running, in words (what is due but held, or the nearest threshold).
//   - pages.go and pages/*.html: the templates (inline CSS, no script, a
//     meta refresh).
//
// It owns the pages only. It reads, never schedules, mutates or records:
// every figure is copied from state the worker already keeps, on request,
// so the pages cost nothing while nobody looks. The explanation of what is
// due is the planner's own (planner.Explain, as `reactor plan` prints it);
// this package adds no rule of its own. Errors and locations go through
// package redact before they are shown, and html/template escapes every
// value.
package status
