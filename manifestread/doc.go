// Package manifestread reads Iceberg manifests' entries and manifest lists
// as iceberg-go's ReadManifest and ReadManifestList do, parsing each
// distinct Avro schema text once per Reader instead of once per file.
//
// iceberg-go v0.7.0 opens every manifest with twmb/avro's ocf.NewReader,
// which parses the schema JSON in the file's header each time: a third of
// a table refresh's CPU in a burst of new commits, a tenth of reactor's
// in the 5 commits/s soak (BENCHMARKS.md, section 27). Every manifest a
// table writes with one partition spec and format version carries the
// same text, so a Reader keeps the compiled form of each text it has seen
// in a bounded LRU (schemas.go), keyed by a hash of the schema text and
// the partition-spec text (a day transform types its field as a date)
// and used only when both texts are byte-for-byte equal: two different
// texts never share an entry.
//
//   - read.go: Reader and Fetch, the drop-in for ManifestFile.FetchEntries:
//     the same checks of the header and of each entry, the same
//     inheritance of snapshot id, sequence numbers and first row ids. A
//     file it does not read (a codec other than null, deflate or snappy, a
//     field iceberg-go does not know) or refuses is read by iceberg-go, so
//     the answer or the error is iceberg-go's.
//   - list.go: Reader.ManifestList, the drop-in for Snapshot.Manifests:
//     the same version inference and checks, the list's schema resolved
//     against reader schemas built as iceberg-go builds its own, the
//     manifests rebuilt through iceberg-go's ManifestBuilder. That builder
//     cannot set a manifest's first row id, so a v3 list naming data
//     manifests is read by iceberg-go.
//   - ocf.go: the Avro object container format: the header, the blocks,
//     their decompression into buffers reused across blocks and files.
//   - schemas.go: the compiled schemas: the writer schema resolved against
//     itself without the column statistics (skipped, not decoded), and the
//     partition fields' ids and logical types (iceberg-go's
//     getFieldIDMap).
//   - entry.go: DataFile, an iceberg.DataFile whose column statistics are
//     nil; partition values typed as iceberg-go types them.
//
// Its entries are for counting and planning: never hand them to a
// manifest writer (the statistics would be lost). It reads through the
// IO it is given and writes nothing.
package manifestread
