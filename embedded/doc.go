// Package embedded starts the parts reactor needs when nothing is configured:
// an in-process NATS server with JetStream, and an iceberg-go SQL catalog on
// SQLite over a local warehouse directory. `reactor demo`, `reactor run`
// without a NATS URL, and the tests all use it, so what runs on a laptop is
// what is tested.
//
//   - nats.go: StartNATS, the NATS server with JetStream.
//   - catalog.go: OpenCatalog, the SQLite catalog under a directory
//     (CatalogProperties, CatalogFile).
//
// For tests: package embedded/embeddedtest (servers stopped when their test
// ends, NATS clusters) and package embedded/s3gateway (an S3 server).
//
// It owns process-local servers and files only; it must not know about
// events, thresholds or jobs.
package embedded
