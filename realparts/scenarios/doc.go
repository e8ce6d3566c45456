// Package scenarios is the realparts suite: reactor against a real MinIO
// publishing bucket notifications to a real nats-server (JetStream), with
// its tables in the reference Iceberg REST catalog (the
// org.apache.iceberg:iceberg-open-api jar). Each is a separate process,
// started by the tests from the binaries realparts/run installs and pointed
// to by environment variables; reactor itself runs as the `reactor run`
// binary, configured through the environment exactly as docker-compose.yml
// configures it (realparts/settings.yaml holds those settings).
//
// Without REALPARTS_MINIO, REALPARTS_NATS_SERVER, REALPARTS_CATALOG_JAR and
// REALPARTS_REACTOR every test skips, so `go test ./...` stays
// self-contained. MinIO is AGPL-licensed: it is only ever run as a separate
// process here, never imported or linked.
//
// The package owns its servers' lifecycles and nothing else: it must not
// reach into reactor's internals (it sees reactor through NATS, /metrics
// and the tables, as a user does).
package scenarios
