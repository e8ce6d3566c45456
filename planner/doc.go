// Package planner owns reactor's picture of each table: per-partition
// counters (data files, bytes, rows, small files, last write) kept current
// by reading only the manifests each new snapshot added, and the decision of
// which partitions need a job now — threshold crossed, not in a quiet period,
// not cooling down, not already being worked on.
//
// It reads table metadata and manifests through iceberg-go but never writes
// to a table: running jobs is the executor's business, receiving events the
// triggers'.
package planner
