// Package chaos is a test only: three reactor replicas as real processes
// (this package's test binary in a child mode) on one SQLite catalog and
// warehouse and one NATS server the test owns, a writer committing
// appends, position deletes and equality deletes, and a seeded schedule of
// faults: SIGKILL and SIGTERM of a replica (restarted under its name),
// SIGSTOP for longer than the lease TTL then SIGCONT (alone, or with a
// new process started under the stopped one's name meanwhile), and NATS
// restarts.
// At the end it checks the rows with a reader of its own (manifests and
// Parquet files read directly, deletes applied by its own code, not
// iceberg-go's scan), that no two jobs of a table overlapped, and that a
// stopped replica committed nothing once its lease had lapsed.
//
// `go test ./chaos` runs the short form (about 45 s of faults, skipped
// with -short); REACTOR_CHAOS=<duration> runs the long form, with
// REACTOR_CHAOS_SEED to replay a schedule (docs/development.md#chaos-test).
//
// It owns nothing outside its test files and must not be imported.
package chaos
