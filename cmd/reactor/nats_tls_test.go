package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/icereactor/reactor/embedded/embeddedtest"
)

// natsServer starts an in-process nats-server with JetStream, adjusted by
// configure, and returns its client URL.
func natsServer(t *testing.T, configure func(*server.Options)) string {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoSigs: true,
		JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30}
	configure(opts)
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(15 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return "nats://" + srv.Addr().String()
}

func tlsServer(t *testing.T, certs embeddedtest.Certificates, verifyClients bool) func(*server.Options) {
	return func(o *server.Options) {
		cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: certs.ServerCert, KeyFile: certs.ServerKey,
			CaFile: certs.CA, Verify: verifyClients})
		if err != nil {
			t.Fatal(err)
		}
		o.TLSConfig, o.TLS, o.TLSVerify, o.TLSTimeout = cfg, true, verifyClients, 5
	}
}

// reactor run against a nats-server with TLS (certificates generated
// here): with the CA it connects and consumes; with a wrong CA, or the
// system's roots, it refuses and says which; against a server that
// verifies clients, with a client certificate it connects, without one it
// says that one is wanted. reactor write connects the same way.
func TestNATSTLS(t *testing.T) {
	certs := embeddedtest.NewCertificates(t, "")
	dataDir := func() []string {
		return []string{"--data-dir", t.TempDir(), "--http-addr", "", "--status-addr", "", "--notification-subject", ""}
	}
	run := func(url string, flags ...string) (int, string) {
		t.Helper()
		code, _, stderr, _ := runCommand(t, append(append([]string{"run", "--nats-url", url}, dataDir()...), flags...), "reactor running")
		return code, stderr
	}

	// Every connection reactor makes uses the settings: the consumers',
	// the reports' and the leases' (one), and the fast lane's own.
	allConnected := func(stderr string) bool {
		return strings.Contains(stderr, "consuming commit events") && strings.Contains(stderr, "table leases acquired") &&
			!strings.Contains(stderr, "no fast lane")
	}
	plain := natsServer(t, tlsServer(t, certs, false))
	if code, stderr := run(plain, "--nats-tls-ca", certs.CA); code != 0 || !allConnected(stderr) || !strings.Contains(stderr, `"nats_tls":true`) {
		t.Fatalf("with the CA: exit %d\n%s", code, stderr)
	}
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"a wrong CA", []string{"--nats-tls-ca", certs.WrongCA}, "the server's certificate is not signed by --nats-tls-ca " + certs.WrongCA},
		{"the system's roots", nil, "the server's certificate is not signed by the system's roots (set --nats-tls-ca for a private CA)"},
	} {
		code, stderr := run(plain, tt.flags...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, want 1 and %q\n%s", tt.name, code, tt.want, stderr)
		}
		if strings.Contains(stderr, "waiting for it") {
			t.Errorf("%s: reactor waits for a server it can never trust\n%s", tt.name, stderr)
		}
	}

	mutual := natsServer(t, tlsServer(t, certs, true))
	if code, stderr := run(mutual, "--nats-tls-ca", certs.CA, "--nats-tls-cert", certs.ClientCert, "--nats-tls-key", certs.ClientKey); code != 0 ||
		!allConnected(stderr) {
		t.Fatalf("mutual TLS with a client certificate: exit %d\n%s", code, stderr)
	}
	if code, stderr := run(mutual, "--nats-tls-ca", certs.CA); code != 1 || !strings.Contains(stderr, "set --nats-tls-cert and --nats-tls-key") {
		t.Errorf("mutual TLS without a client certificate: exit %d\n%s", code, stderr)
	}

	// reactor write, the pipeline's side, with the same flags.
	dir := t.TempDir()
	var out, errOut syncBuffer
	if code := execute(t.Context(), []string{"write", "db.events", "--nats-url", mutual, "--data-dir", dir, "--commits", "1",
		"--nats-tls-ca", certs.CA, "--nats-tls-cert", certs.ClientCert, "--nats-tls-key", certs.ClientKey}, &out, &errOut); code != 0 {
		t.Errorf("reactor write with mutual TLS: exit %d\n%s", code, errOut.String())
	}
}

// An nkey seed file authenticates to a server that knows the user by its
// public key; a seed it does not know is refused, at once.
func TestNATSNKey(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	dir := t.TempDir()
	seedFile, otherFile := filepath.Join(dir, "reactor.nk"), filepath.Join(dir, "other.nk")
	if err := os.WriteFile(seedFile, append(seed, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	url := natsServer(t, func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} })
	args := func(seed string) []string {
		return []string{"run", "--nats-url", url, "--nats-nkey", seed, "--data-dir", t.TempDir(), "--http-addr", "", "--status-addr", "",
			"--notification-subject", ""}
	}
	if code, _, stderr, _ := runCommand(t, args(seedFile), "reactor running"); code != 0 || !strings.Contains(stderr, "consuming commit events") ||
		strings.Contains(stderr, "no fast lane") {
		t.Fatalf("with the seed: exit %d\n%s", code, stderr)
	}
	code, _, stderr, _ := runCommand(t, args(otherFile), "")
	if code != 1 || !strings.Contains(stderr, "Authorization Violation") {
		t.Errorf("another seed: exit %d\n%s", code, stderr)
	}
	for _, secret := range []string{string(seed), string(otherSeed)} {
		if strings.Contains(stderr, secret) {
			t.Error("a seed in the output")
		}
	}
	// A file that is no seed is a usage error naming the flag's file.
	bad := filepath.Join(dir, "bad.nk")
	if err := os.WriteFile(bad, []byte("not a seed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr, _ := runCommand(t, args(bad), ""); code != 2 || !strings.Contains(stderr, "not an nkey seed") {
		t.Errorf("a bad seed file: exit %d\n%s", code, stderr)
	}
}
