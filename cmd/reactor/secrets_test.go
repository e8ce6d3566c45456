package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/sqliteshim"
)

// The secrets a hostile reviewer would plant in every URL and property a
// command takes; none may appear in any output.
const (
	natsPassword = "NATSPASS-h7w2"
	natsToken    = "NATSTOKEN-k3v9"
	authPass     = "AUTHPASS-q8z1"
	s3Secret     = "S3SECRET-m4x6"
	restPassword = "RESTPASS-p2c5"
	restCred     = "RESTCRED-b9n3"
)

var plantedSecrets = []string{natsPassword, natsToken, authPass, s3Secret, restPassword, restCred}

func assertNoSecrets(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range plantedSecrets {
		if strings.Contains(text, s) {
			i := strings.Index(text, s)
			t.Errorf("%s contains the secret %s: ...%s...", where, s, text[max(0, i-120):min(len(text), i+40)])
		}
	}
}

// closedPort is a loopback address nothing listens on: NATS or a catalog
// that is down.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// runCommand runs one reactor command through execute, as main does. A
// command that keeps running (run, once started) is stopped when its stderr
// shows until, or after two minutes at most (a hang guard).
func runCommand(t *testing.T, args []string, until string) (code int, stdout, stderr string, addr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- execute(ctx, args, &out, &errOut) }()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case code = <-done:
			return code, out.String(), errOut.String(), ""
		case <-deadline:
			cancel()
			return within(t, done, time.Minute, "the command to return after its context ended"), out.String(), errOut.String(), ""
		case <-time.After(20 * time.Millisecond):
		}
		if until != "" && strings.Contains(errOut.String(), until) {
			if m := regexp.MustCompile(`"msg":"serving /metrics, /healthz and /readyz","addr":"([^"]+)"`).FindStringSubmatch(errOut.String()); m != nil {
				addr = m[1]
			}
			if addr != "" {
				for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
					resp, err := http.Get("http://" + addr + path)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					assertNoSecrets(t, path, string(body))
				}
			}
			cancel()
			return within(t, done, time.Minute, "the command to return after its context ended"), out.String(), errOut.String(), addr
		}
	}
}

// No password, token, secret key or _auth_pass value reaches a log line,
// an error, stdout, /metrics or /readyz, for any command that takes a URL
// or catalog properties: at start-up, and when NATS or the catalog is down.
func TestNoSecretsInAnyCommandOutput(t *testing.T) {
	dir := t.TempDir()
	natsDown := closedPort(t)
	restDown := closedPort(t)
	natsWithPassword := "nats://reactor:" + natsPassword + "@" + natsDown
	natsWithToken := "nats://" + natsToken + "@" + natsDown
	sqlDSN := "file:" + filepath.Join(dir, "catalog.db") + "?_auth&_auth_user=admin&_auth_pass=" + authPass + "&_pragma=busy_timeout(10000)"
	sqlCatalog := []string{"--catalog-type", "sql", "--catalog-uri", sqlDSN, "--warehouse", "file://" + filepath.Join(dir, "warehouse"),
		"--catalog-prop", "sql.driver=" + sqliteshim.ShimName, "--catalog-prop", "sql.dialect=sqlite",
		"--catalog-prop", "init_catalog_tables=true", "--catalog-prop", "s3.secret-access-key=" + s3Secret}
	restCatalog := []string{"--catalog-uri", "http://admin:" + restPassword + "@" + restDown + "/catalog?credential=" + restCred,
		"--catalog-prop", "s3.secret-access-key=" + s3Secret, "--catalog-prop", "token=" + natsToken}
	dataDir := []string{"--data-dir", filepath.Join(dir, "data")}

	type tc struct {
		name  string
		args  []string
		until string // the command keeps running (run waits for NATS): stop it once this is logged
		code  int    // -1: any
	}
	cases := []tc{
		{"run, NATS down (password)", append([]string{"run", "--nats-url", natsWithPassword, "--http-addr", "", "--status-addr", ""}, dataDir...), "NATS is not reachable; waiting", -1},
		{"run, NATS down (token)", append([]string{"run", "--nats-url", natsWithToken, "--http-addr", "", "--status-addr", ""}, dataDir...), "NATS is not reachable; waiting", -1},
		{"run, NATS down, URL list", append([]string{"run", "--nats-url", natsWithPassword + "," + natsWithToken, "--http-addr", "", "--status-addr", ""}, dataDir...), "NATS is not reachable; waiting", -1},
		{"run, invalid NATS URL", []string{"run", "--nats-url", "nats://reactor:" + natsPassword + " x@" + natsDown}, "", 2},
		{"run, catalog down", append(append([]string{"run", "--http-addr", "127.0.0.1:0", "--status-addr", "127.0.0.1:0"}, dataDir...), restCatalog...), "catalog not reachable; waiting", -1},
		{"run, SQL catalog with _auth_pass", append(append([]string{"run", "--http-addr", "127.0.0.1:0", "--status-addr", "127.0.0.1:0"}, dataDir...), sqlCatalog...), "reactor running", -1},
		{"write, NATS down", append(append([]string{"write", "db.t", "--nats-url", natsWithPassword}, dataDir...), sqlCatalog...), "", 1},
		{"write, invalid NATS URL", []string{"write", "db.t", "--nats-url", "nats://u:" + natsPassword + "@host:port"}, "", 2},
	}
	for _, cmd := range []string{"health", "plan", "compact", "rewrite-deletes", "expire", "orphans", "rewrite-manifests"} {
		cases = append(cases,
			tc{cmd + ", catalog down", append([]string{cmd, "db.t", "--data-dir", dir}, restCatalog...), "", -1},
			tc{cmd + ", SQL catalog with _auth_pass", append([]string{cmd, "db.t", "--data-dir", dir}, sqlCatalog...), "", -1})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr, _ := runCommand(t, c.args, c.until)
			if c.code >= 0 && code != c.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, c.code, stderr)
			}
			if c.code < 0 && c.until == "" && code == 0 {
				t.Errorf("exit code 0 for a failure case\nstderr:\n%s", stderr)
			}
			assertNoSecrets(t, "stdout", stdout)
			assertNoSecrets(t, "stderr", stderr)
			if !strings.Contains(stderr, "***") && !strings.Contains(stderr, "db.t") {
				t.Errorf("stderr shows nothing of what was redacted or why it failed:\n%s", stderr)
			}
			t.Logf("stderr:\n%s", stderr)
		})
	}
}
