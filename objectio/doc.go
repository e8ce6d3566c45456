// Package objectio shapes reactor's reads of objects for object storage
// reached over a network, below iceberg-go's FileIO interface: S3 (s3://,
// s3a://, s3n://), Google Cloud Storage (gs://) and Azure Blob storage and
// ADLS Gen2 (abfs://, abfss://, wasb://, wasbs://).
//
// It replaces the FileIO iceberg-go registers for the s3, s3a and s3n
// schemes (io/gocloud/s3) with one that keeps iceberg-go's for everything
// but opening a file (register.go, object.go), and iceberg-go's GCS and
// Azure FileIOs with BucketIO (bucket.go, gcs.go, azure.go), which takes
// the same catalog properties and credentials in the same order and reads
// the same way (one ranged GET of an object's first WholeObjectBytes,
// since neither store's gocloud driver reads a suffix range). In detail:
//
//   - Open issues one GET, of the object's last WholeObjectBytes (8 MiB by
//     default, a suffix range). A smaller object arrives whole, and the
//     Parquet reader's footer, column-chunk and Avro reads are served from
//     memory: one request per file instead of the whole-object GET
//     iceberg-go's Open starts and throws away plus one ranged GET per
//     ReadAt. A larger object keeps its tail (footer and last row groups)
//     and reads the rest by ranges of at least RangeBytes, so neighbouring
//     column chunks share a request.
//
//   - Every FileIO it builds shares one HTTP transport per proxy and
//     connect-timeout setting (one for all GCS and Azure FileIOs), whose
//     idle pool holds more connections per host than any read concurrency
//     reactor allows, so connections are reused across the FileIOs
//     iceberg-go builds per scan and per commit instead of being opened
//     for each (the GCS client's default transport keeps 2 idle
//     connections per host, the Azure SDK's 10).
//
//   - Open and ReadFile refuse a table file over its size limit
//     (package sizelimit: metadata.json, manifest lists, manifests,
//     Parquet footers) from the first GET, before more is read.
//
//   - Every request is bounded (register.go): 10 s to connect
//     (s3.connect-timeout), and no more than ReadTimeoutProperty (30 s)
//     without a byte from the store, through the AWS SDK's rolling read
//     deadline; with the retryer's attempts, a store that accepts
//     connections and never answers fails the read instead of hanging
//     the job that made it.
//
//   - WalkDir (walk.go) lists the directories of a walk the read
//     concurrency at once, with fs.WalkDir's entries and order: orphan
//     cleanup's full listing of a partitioned table costs a few round
//     trips instead of two per directory one after another.
//
//   - CredentialsExpireAt (expiry.go) is when the credentials a FileIO was
//     built with expire, from the expiry a REST catalog vends beside them
//     (zero for credentials that do not expire or that the store's own
//     chain renews).
//
//   - Vended credentials are renewed mid-job (renew.go): RenewingCatalog
//     (renew_catalog.go) hands out tables whose FileIOs share one
//     Credentials per loaded table, which loads the table again through
//     the catalog shortly before the credentials expire (five minutes,
//     or half their lifetime when shorter) and when the store refuses
//     them (CredentialsRefused, renew_errors.go: expired, revoked or
//     unknown credentials, not a permission refused), then makes the
//     refused request once more: one renewal and one retry per request.
//     An open object's later reads, a walk and a small write are made
//     again the same way (renew_files.go).
//
// Writes, bulk deletes and the listing of one directory are iceberg-go's
// own (blobfs.FileIO) on the same client; Remove is one request (no
// existence check on S3, no directory-marker retry on GCS and Azure);
// Open and ReadFile refuse a table file over its size limit (package
// sizelimit) on every store. The package owns no table semantics:
// it must not interpret metadata (the kinds of files with a size limit are
// package sizelimit's), cache objects beyond one open file, or
// change what is written. Importing it (for its side effect) is enough;
// the executor does.
package objectio
