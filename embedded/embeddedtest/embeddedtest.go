// Package embeddedtest starts reactor's embedded servers for tests, each
// stopped when its test ends. It holds test setup only; nothing outside
// _test.go files may import it.
//
//   - embeddedtest.go: JetStream, a server and a client.
//   - cluster.go: Cluster, in-process nodes routed on loopback (StartCluster,
//     Stop, Restart, WaitMetaLeader).
//   - certs.go: Certificates, a CA and server and client certificates as PEM
//     files, for the TLS tests.
package embeddedtest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
)

// JetStream starts an embedded NATS server with JetStream, storing under
// storeDir (t.TempDir() when empty), and connects a client to it. The
// connection is closed and the server shut down when the test ends.
func JetStream(t testing.TB, storeDir string, opts ...jetstream.JetStreamOpt) (*embedded.NATS, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	if storeDir == "" {
		storeDir = t.TempDir()
	}
	srv, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: storeDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return srv, nc, js
}
