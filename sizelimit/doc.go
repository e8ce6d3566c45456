// Package sizelimit bounds what reading one table file may cost reactor in
// memory: a metadata.json (read whole, and decoded, by iceberg-go), a
// manifest list and a manifest (Avro, decoded whole), and a Parquet
// footer. A hostile or broken file over its limit is refused before it is
// read, with an error naming the file, its size and the limit, instead of
// costing the process its memory on every pass.
//
//   - limits.go: [Limits], read from catalog properties
//     ([FromProperties]) with generous defaults, the kind of a file by its
//     name ([KindOf]), and the checks ([Limits.CheckFile],
//     [Limits.CheckFooter], [Limits.CheckMetadata]) returning [*Error].
//   - local.go: [LocalFS], iceberg-go's local file IO with Open and
//     ReadFile checked, registered for the file scheme and plain paths
//     when this package is imported. Package objectio checks its s3://
//     FileIO the same way.
//
// The limits apply where iceberg-go reads, at the IO layer: every table's
// FileIO (the catalog's load of metadata.json, the planner's and the jobs'
// reads of manifests and data files) is built through the IO registry.
// The package owns the checks only: it must not interpret a file beyond
// its name, its size, a Parquet file's last 8 bytes and a compressed
// metadata file's decompressed length, nor decide what a refusal means
// for a job (the caller's error handling does).
package sizelimit
