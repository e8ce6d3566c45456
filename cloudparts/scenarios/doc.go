// Package scenarios is the cloudparts suite: reactor on Google Cloud
// Storage and Azure Blob storage warehouses, and on S3 with credentials a
// REST catalog vends and revokes.
//
// The stores are their emulators, stand-ins that answer each store's API:
// fake-gcs-server for GCS and Azurite for Azure Blob storage (ADLS Gen2
// locations, abfss://, reach the same blobs). The credentials come from a
// real MinIO (its STS AssumeRole issues temporary credentials) and the
// reference Iceberg REST catalog, behind a front written for these tests
// (a stand-in for a governed catalog such as Polaris) that adds OAuth2 and
// credential vending. Each is a separate process started by the tests
// from the binaries cloudparts/run installs and points to by environment
// variables; reactor itself runs as its binary.
//
// Without CLOUDPARTS_FAKE_GCS, CLOUDPARTS_AZURITE and CLOUDPARTS_REACTOR
// every test skips, so `go test ./...` stays self-contained.
//
// The package owns its servers' lifecycles and nothing else: it sees
// reactor as a user does, through its commands, its logs and the tables.
package scenarios
