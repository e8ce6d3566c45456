// Package sparkcall renders a reactor job as the equivalent Spark SQL
// procedure call of Iceberg's Spark runtime, so a job too large for one
// worker can be handed to a Spark cluster, and so reactor's behaviour can be
// checked against the reference implementation on the same table.
//
// It owns the translation of a [jobs.Job] and its
// [thresholds.Effective] settings into `CALL <catalog>.system.<procedure>(...)`
// text: the procedure, the option names and values the seeds document
// (target-file-size-bytes, min-file-size-bytes, max-file-size-bytes,
// min-input-files, delete-file-threshold, delete-ratio-threshold,
// max-file-group-size-bytes, partial-progress.enabled,
// partial-progress.max-commits; older_than, retain_last, dry_run), a `where`
// predicate that selects exactly the job's partitions by their partition
// values, the quoting of identifiers (backticks, embedded backticks doubled)
// and of string literals (single quotes, backslash escapes, for Spark's
// default spark.sql.parser.escapedStringLiterals=false), and the result
// columns each procedure returns. What a Spark call cannot express faithfully
// (a dry-run compaction, a deferred expiry deletion, orphan candidates from
// bucket notifications, a partition of a spec that is no longer the table's
// current one, a partition value Spark has no literal for) is rejected with
// an error wrapping [ErrNotExpressible]; delete_expired_files has no Spark
// form at all ([ErrNoSparkForm]).
//
// It must not touch anything: it opens no catalog, reads no file, runs no
// Spark and changes no job. It does not decide what to run (the planner
// does) and does not apply reactor's safety rules again; the job it is given
// already satisfies them (min_reader_margin, the orphan margin floor), and a
// rendered statement only ever gets safer with time: its older_than
// timestamps are absolute, computed from [Options.Now] and truncated towards
// the past.
//
// # Files
//
//   - sparkcall.go: Render, the procedures and their options, and
//     [ResultColumns].
//   - where.go: the predicate that selects exactly a partition by its
//     values, transform by transform.
//   - quote.go: [QuoteIdent], [QuoteMultipart] and string literals.
package sparkcall
