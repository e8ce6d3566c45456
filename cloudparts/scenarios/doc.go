// Package scenarios is the cloudparts suite: reactor on Google Cloud
// Storage and Azure Blob storage warehouses.
//
// The stores are their emulators, stand-ins that answer each store's API:
// fake-gcs-server for GCS and Azurite for Azure Blob storage (ADLS Gen2
// locations, abfss://, reach the same blobs). Each is a separate process
// started by the tests from the binaries cloudparts/run installs and points
// to by environment variables; reactor itself runs as its binary.
//
// Without CLOUDPARTS_FAKE_GCS, CLOUDPARTS_AZURITE and CLOUDPARTS_REACTOR
// every test skips, so `go test ./...` stays self-contained.
//
// The package owns its servers' lifecycles and nothing else: it sees
// reactor as a user does, through its commands, its logs and the tables.
package scenarios
