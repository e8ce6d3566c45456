// Package datapath writes rewrite outputs: data files through reactor's own
// Parquet writer, with iceberg-go's settings, names, locations and
// statistics, and position-delete files.
//
//   - units.go: OwnWriterFor (whether reactor's writer applies to a
//     group, ErrNotOwnWriter when iceberg-go's must write it), SplitUnits
//     (a group cut into units of about one output file), WriteUnit (one
//     unit read, deletes applied, and written).
//   - writer.go: Format (a group's output format from the table's
//     properties), RollingWriter (files rolled at the target size),
//     CountingWriter (the one writer that counts a file's bytes, for data,
//     delete and manifest files).
//   - codec.go: the one list of Parquet codecs reactor writes, by their
//     Iceberg names, with the levels iceberg-go accepts.
//   - posdeletes.go: ReadPositionDeletes, WritePositionDeleteFile,
//     PartitionLocation, DeleteCodec.
//   - scan.go: Scan, a table's scan reading as many files at once as its
//     store's read concurrency allows.
//
// It owns the bytes of the files reactor writes. It must not commit, plan
// or delete anything but the partial file of a failed write.
package datapath
