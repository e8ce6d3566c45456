// Package probe measures Iceberg tables and a running reactor from the
// outside, the way a reader, a writer and an operator see them: live data
// files against the ideal count, delete files, snapshots, data manifests, the
// files a full scan plans, a full scan's time against the same rows fully
// compacted, job outcomes and bytes rewritten from reactor's job events,
// commit latencies and a process's CPU time. The soak benchmark (bench/soak)
// and `reactor demo` sample through it.
//
// It reads the catalog, the tables' files and the job events reactor
// publishes on NATS, nothing else; it must not import the planner or the
// executor: an instrument that trusted reactor's own bookkeeping could not
// catch its mistakes.
//
// # Files
//
//   - table.go: [Measure], one [TableSample] of a table's current snapshot.
//   - compacted.go: [ScanSample], a full scan against the same rows fully
//     compacted.
//   - jobs.go: [JobTally], reactor's job events added up.
//   - latency.go: [Latencies], commit latency percentiles per interval.
//   - cpu.go: [ProcessCPU], a process's CPU time from /proc.
package probe
