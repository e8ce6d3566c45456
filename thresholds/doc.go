// Package thresholds owns reactor's compaction policy: the format of the
// thresholds document (one YAML file, later mounted from a Kubernetes
// ConfigMap), its validation, and its resolution into concrete, effective
// settings for one table.
//
// # Document
//
// A document has three top-level keys (and concurrency, and spark: which
// jobs run on a Spark cluster through Spark Connect, see [Spark]):
//
//	namespaces: [db, prod.events]   # watched namespaces; empty or absent = every namespace
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
// [Config.For] resolves the settings for one table field by field: the first
// set value among the matching overrides (most specific first; see
// [Config.For]) and then defaults; for the target file size, the table's
// write.target-file-size-bytes property comes next; finally the built-in
// default.
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
