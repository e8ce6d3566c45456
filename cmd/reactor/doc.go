// Command reactor keeps Apache Iceberg tables healthy while streaming writers
// commit to them: it consumes commit events and bucket notifications from
// NATS JetStream, keeps per-partition counters, and runs the smallest job
// that fixes what crossed a threshold — compaction (bin-pack, sort or
// z-order), position-delete merges, snapshot expiry and the deferred
// deletion of what it unlinked, manifest rewrites, orphan cleanup —
// committing beside the writers.
//
// Usage:
//
//	reactor run [flags]      run the worker until SIGINT or SIGTERM
//	reactor demo [flags]     run an embedded, self-checking demonstration
//	reactor health TABLE     check one table's health now
//	reactor plan TABLE       show what would be scheduled now, and why
//	reactor compact TABLE    compact now (rewrite_data_files)
//	reactor rewrite-deletes TABLE     merge position deletes (rewrite_position_delete_files)
//	reactor convert-equality-deletes TABLE   equality deletes to position deletes
//	reactor expire TABLE     expire snapshots now (expire_snapshots)
//	reactor orphans TABLE    find orphan files (remove_orphan_files)
//	reactor rewrite-manifests TABLE   merge manifests (rewrite_manifests)
//	reactor validate-config FILE      check a thresholds file
//	reactor write TABLE      a small streaming writer, for trying reactor out
//	reactor version          print version information
//	reactor help [command]   show help
//
// Every subcommand accepts -h (or --help) to list its flags. The flags of
// `reactor run` can also be set through REACTOR_* environment variables.
// The reference is docs/cli.md.
//
// # Files
//
//   - main.go: the subcommand table, exit codes, signal handling.
//   - run.go: `reactor run`, the worker (package worker wires it); run_log.go
//     its JSON logger.
//   - demo.go, demo_live.go, demo_summary.go, demo_quiet.go: `reactor demo`:
//     the backlog, the line a second, the before/after summary and the row
//     check; demo_next.go its thresholds file and the commands it ends with.
//   - table_command.go: the shared shape of the commands on one table
//     (catalog flags, thresholds, TABLE, --json); catalog_flags.go the
//     catalog flags every command that opens a catalog shares;
//     catalog_tables.go the catalog a table command names in its messages
//     (and the check that an embedded one exists: reading creates nothing);
//     env.go the REACTOR_* variables; surface_flags.go the flags of what
//     `reactor run` exposes and connects to (status pages, NATS credentials
//     and TLS, stream limits, size limits); record_flags.go the deletion
//     rule's flags (deletion scope, record keys).
//   - health.go, plan.go: `reactor health` and `reactor plan`.
//   - oneshot.go: the one-shot jobs through the worker's executor, printing
//     the Spark procedure's result columns; compact.go, rewrite_deletes.go,
//     expire.go, orphans.go, rewrite_manifests.go, convert_deletes.go: one
//     each; progress.go their progress line on a terminal.
//   - validate_config.go, write.go, version.go: `reactor validate-config`,
//     `reactor write`, `reactor version`.
package main
