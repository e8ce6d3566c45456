// Package thresholds owns reactor's compaction policy: the format of the
// thresholds document (one YAML file, later mounted from a Kubernetes
// ConfigMap), its validation, and its resolution into concrete, effective
// settings for one table.
//
// # Document
//
// A document has seven top-level keys, every one optional (config.go):
//
//	namespaces: [db, prod.events]   # watched namespaces; empty or absent = every namespace
//	concurrency: 2                  # jobs at once across tables (read at start)
//	sort_memory: 256MiB             # decoded rows one sort/z-order group holds before spilling
//	spill_dir: /tmp/reactor-spill   # where those spilled runs go
//	spark: {}                       # which jobs run on a Spark cluster ([Spark], spark.go)
//	defaults:                       # a Policy applied to every table
//	  target_file_size: 512MiB
//	tables:                         # per-table overrides, each a match plus a Policy
//	  - match: db.events            # exact "namespace.table" ...
//	    small_file_count: 20
//	  - match: "*.staging_*"        # ... or a path.Match glob
//	    cooldown: 5m
//
// Every Policy field is optional; an absent (or null) field inherits. See
// example.yaml in this directory for a commented document covering every
// field, and the Default* constants for the built-in values.
//
// Sizes are integers (bytes) or strings with a unit (512MiB, 64 MiB, 1.5GiB,
// 100KB; see [ParseSize]). Durations are Go duration strings (500ms, 30s, 72h)
// or whole or fractional days (5d, 1.5d; see [ParseDuration]).
//
// Parsing is strict: unknown keys, duplicate keys, values of the wrong type
// and out-of-range values are errors naming the field path, e.g.
// "tables[1].small_file_ratio" (list indexes are 0-based). Validation errors
// are [*FieldError] values joined with [errors.Join], so callers can report
// all of them at once and inspect each with [errors.As].
//
// # Resolution
//
// [Config.For] (effective.go) resolves the settings for one table field by
// field into an [Effective]: the first set value among the matching
// overrides (most specific first; match.go) and then defaults, then the
// built-in default. Two families consult the table's properties: the
// sizes (write.target-file-size-bytes, write.delete.target-file-size-bytes)
// come after the document and before the built-ins, while the retention
// properties (history.expire.max-snapshot-age-ms,
// history.expire.min-snapshots-to-keep) win over the document, as Spark's
// expire_snapshots treats them (docs/design.md#threshold-precedence).
// The orphan margin is never below the highest orphan_margin_floor among
// the matching levels.
//
// # Files
//
//   - config.go: [Config], [Override], [Policy], the Default* built-ins and
//     [Builtin], [Parse] and [Load], the table properties consulted.
//   - validate.go: [Config.Validate], every field's range and the rules
//     across fields (orphan margins against floors, small_file_count against
//     min_input_files, duplicate matches).
//   - effective.go: [Config.For] and [Effective]; match.go: which overrides
//     match a table and in what order.
//   - size.go, duration.go: [Size] and [Duration], their YAML forms and
//     [ParseSize], [ParseDuration].
//   - quiet.go: compact_when_quiet_after's [DurationOrOff] (a duration, or
//     "off") and its bounds.
//   - spark.go: the spark section ([Spark], [SparkRule],
//     [Config.SparkSettings]).
//   - errors.go: [FieldError], one invalid field with its path.
//   - limits.go: the limits checked before the YAML parser runs (size,
//     nesting, values; [LimitError], [ReadFile]); hostile.go: what an error
//     may quote and how many problems are listed, and the recovered panic
//     ([InternalError]).
//   - normalize.go: empty lists decoded as absent, so a document does not
//     depend on the spelling.
//   - example.yaml: a commented document covering every field.
//
// # Boundaries
//
// The package performs no I/O beyond reading the one file handed to [Load]. It
// does not talk to the Iceberg catalog, NATS, or anything else: table
// properties are passed in as a plain map[string]string, and namespaces and
// tables are plain dot-joined strings. It depends only on the standard library,
// github.com/goccy/go-yaml and reactor's sortorder, excerpt and redact packages (redact masks a
// credential a spark.endpoint must not carry before an error quotes it), and holds
// no package-level mutable state. Hostile documents are bounded before parsing
// (limits.go) and while reporting (hostile.go).
package thresholds
