package catalogs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
)

// authFront is a STAND-IN for a governed REST catalog: an OAuth2 token
// endpoint and a bearer-token check in front of a minimal REST handler
// that answers /v1/config and the namespace listing only (there is no
// Iceberg REST server in Go; the reference catalog runs in realparts).
// It judges expiry by the test's clock, as reactor does.
type authFront struct {
	t   *testing.T
	srv *httptest.Server

	mu           sync.Mutex
	now          time.Time
	expiresIn    time.Duration
	valid        map[string]time.Time // token -> when it expires (zero: never)
	logins       int
	refused      int // catalog requests answered 401
	refuseLogins bool
	used         []string // tokens of the catalog requests answered 200
}

const frontSecret = "s3cr3t-client-secret"

func newAuthFront(t *testing.T) *authFront {
	f := &authFront{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), expiresIn: time.Hour, valid: map[string]time.Time{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *authFront) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *authFront) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// revokeAll makes every token given so far invalid, as a server that
// revoked them.
func (f *authFront) revokeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.valid = map[string]time.Time{}
}

func (f *authFront) accept(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.valid[token] = time.Time{}
}

func (f *authFront) counts() (logins, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logins, f.refused
}

func (f *authFront) lastUsed() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.used) == 0 {
		return ""
	}
	return f.used[len(f.used)-1]
}

func (f *authFront) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/v1/oauth/tokens" {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
			r.PostForm.Get("client_id") != "reactor" || r.PostForm.Get("client_secret") != frontSecret || f.refuseLogins {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"client authentication failed"}`))
			return
		}
		if got := r.PostForm.Get("scope"); got != "catalog" {
			f.t.Errorf("token request scope %q, want catalog", got)
		}
		f.logins++
		tok := fmt.Sprintf("oauth-token-%d", f.logins)
		f.valid[tok] = f.now.Add(f.expiresIn)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "bearer",
			"expires_in": int(f.expiresIn / time.Second), "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	exp, ok := f.valid[tok]
	if !ok || (!exp.IsZero() && !f.now.Before(exp)) {
		f.refused++
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"not authorized","type":"NotAuthorizedException","code":401}}`))
		return
	}
	f.used = append(f.used, tok)
	switch r.URL.Path {
	case "/v1/config":
		_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
	case "/v1/namespaces":
		_, _ = w.Write([]byte(`{"namespaces":[["db"]]}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"not served by the stand-in","type":"NoSuchNamespaceException","code":404}}`))
	}
}

// openFront opens the catalog behind f with props, logging into logs.
func openFront(t *testing.T, f *authFront, props map[string]string, logs *bytes.Buffer) *Catalog {
	t.Helper()
	p := iceberg.Properties{"type": TypeREST, "uri": f.srv.URL}
	for k, v := range props {
		p[k] = v
	}
	c, err := Open(t.Context(), Config{Name: "lake", Props: p, MetadataCacheBytes: -1, now: f.clock,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func listNS(t *testing.T, c *Catalog) error {
	t.Helper()
	ns, err := c.ListNamespaces(t.Context(), nil)
	if err == nil && (len(ns) != 1 || ns[0][0] != "db") {
		t.Fatalf("namespaces %v, want [[db]]", ns)
	}
	return err
}

// noSecrets checks that no token or the client secret reached the logs or
// an error.
func noSecrets(t *testing.T, text string) {
	t.Helper()
	for _, s := range []string{frontSecret, "oauth-token-", "file-token-"} {
		if strings.Contains(text, s) {
			t.Errorf("a secret (%s...) in: %s", s, text)
		}
	}
}

// An OAuth2 token the server revoked (a 401) is replaced by one new login
// and the call succeeds; when the server refuses the new token too, the
// call fails after exactly one more login with an error that says so.
func TestRESTOAuth2RevokedTokenIsRenewed(t *testing.T) {
	f := newAuthFront(t)
	var logs bytes.Buffer
	c := openFront(t, f, map[string]string{"credential": "reactor:" + frontSecret}, &logs)
	if err := listNS(t, c); err != nil {
		t.Fatal(err)
	}
	if logins, refused := f.counts(); logins != 1 || refused != 0 {
		t.Fatalf("after opening and a listing: %d logins, %d refused; want 1, 0", logins, refused)
	}
	f.revokeAll()
	if err := listNS(t, c); err != nil {
		t.Fatalf("listing after the token was revoked: %v", err)
	}
	if logins, refused := f.counts(); logins != 2 || refused != 1 {
		t.Errorf("after the revocation: %d logins, %d refused; want 2, 1 (one 401, one new login)", logins, refused)
	}
	if got := f.lastUsed(); got != "oauth-token-2" {
		t.Errorf("the listing went with %q, want the new token", got)
	}

	// Every token refused from now on (the grant was withdrawn).
	f.mu.Lock()
	f.expiresIn = 0 // each new token is expired on arrival at the front
	f.mu.Unlock()
	f.revokeAll()
	err := listNS(t, c)
	if !errors.Is(err, rest.ErrUnauthorized) {
		t.Fatalf("listing with every token refused: %v, want rest.ErrUnauthorized", err)
	}
	const want = "rest catalog lake at " // then the URL
	msg := err.Error()
	if !strings.HasPrefix(msg, want) || !strings.Contains(msg, " refused OAuth2 client credentials (credential) (401 Unauthorized), also after renewing it once: check the credentials and what the catalog grants them: ") {
		t.Errorf("error %q does not say the catalog refused the renewed credentials", msg)
	}
	if logins, refused := f.counts(); logins != 3 || refused != 3 {
		t.Errorf("after the refusal: %d logins, %d refused; want 3, 3 (exactly one new login)", logins, refused)
	}
	noSecrets(t, msg)
	noSecrets(t, logs.String())
	if !strings.Contains(logs.String(), "REST catalog refused the renewed token too") {
		t.Errorf("no log line for the refused renewal:\n%s", logs.String())
	}
}

// A token about to expire is renewed before a request goes with it: no
// request is refused.
func TestRESTOAuth2ExpiringTokenIsRenewed(t *testing.T) {
	f := newAuthFront(t)
	var logs bytes.Buffer
	c := openFront(t, f, map[string]string{"credential": "reactor:" + frontSecret}, &logs)
	for i := range 5 {
		if err := listNS(t, c); err != nil {
			t.Fatalf("listing %d: %v", i, err)
		}
		// Each hour-long token is within its last minute at the next
		// listing: renewed first.
		f.advance(time.Hour - 30*time.Second)
	}
	if logins, refused := f.counts(); logins != 5 || refused != 0 {
		t.Errorf("%d logins, %d refused; want 5, 0 (each token renewed before it expired)", logins, refused)
	}
	if got := f.lastUsed(); got != "oauth-token-5" {
		t.Errorf("the last listing went with %q, want oauth-token-5", got)
	}
	if !strings.Contains(logs.String(), "REST catalog token renewed") {
		t.Errorf("no log line for the renewal:\n%s", logs.String())
	}
	noSecrets(t, logs.String())
}

// kubeTokenDir lays out a token as Kubernetes projects one: token is a
// symlink to ..data/token, ..data a symlink to a timestamped directory.
// rotate swaps ..data atomically, as the kubelet does.
type kubeTokenDir struct {
	t   *testing.T
	dir string
	gen int
}

func newKubeTokenDir(t *testing.T, token string) *kubeTokenDir {
	k := &kubeTokenDir{t: t, dir: t.TempDir()}
	k.rotate(token)
	if err := os.Symlink(filepath.Join("..data", "token"), filepath.Join(k.dir, "token")); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *kubeTokenDir) path() string { return filepath.Join(k.dir, "token") }

func (k *kubeTokenDir) rotate(token string) {
	k.t.Helper()
	k.gen++
	gen := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", k.gen, k.gen)
	if err := os.Mkdir(filepath.Join(k.dir, gen), 0o755); err != nil {
		k.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(k.dir, gen, "token"), []byte(token+"\n"), 0o600); err != nil {
		k.t.Fatal(err)
	}
	tmp := filepath.Join(k.dir, "..data_tmp")
	if err := os.Symlink(gen, tmp); err != nil {
		k.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(k.dir, "..data")); err != nil {
		k.t.Fatal(err)
	}
}

// A token file Kubernetes rotates is read again when it changes: the
// next request goes with the new token, none is refused; a file whose
// token the server revoked and that was not rotated fails with an error
// naming the file.
func TestRESTTokenFileRotationIsPickedUp(t *testing.T) {
	f := newAuthFront(t)
	f.accept("file-token-a")
	k := newKubeTokenDir(t, "file-token-a")
	var logs bytes.Buffer
	c := openFront(t, f, map[string]string{TokenFileProperty: k.path()}, &logs)
	if err := listNS(t, c); err != nil {
		t.Fatal(err)
	}
	k.rotate("file-token-b")
	f.revokeAll()
	f.accept("file-token-b")
	if err := listNS(t, c); err != nil {
		t.Fatalf("listing after the rotation: %v", err)
	}
	if got := f.lastUsed(); got != "file-token-b" {
		t.Errorf("the listing went with %q, want the rotated token", got)
	}
	if _, refused := f.counts(); refused != 0 {
		t.Errorf("%d requests refused; the rotation should be seen before sending", refused)
	}

	// Revoked, and the file still holds it: one more read of the file,
	// no newer token, a clear error.
	f.revokeAll()
	err := listNS(t, c)
	if !errors.Is(err, rest.ErrUnauthorized) || !strings.Contains(err.Error(), " refused the token in "+k.path()+" (401 Unauthorized), also after renewing it once") {
		t.Errorf("listing with the revoked token: %v", err)
	}
	if _, refused := f.counts(); refused != 1 {
		t.Errorf("%d requests refused, want 1 (no retry with the same token)", refused)
	}
	// The kubelet rotates it at last: picked up by the next call.
	k.rotate("file-token-c")
	f.accept("file-token-c")
	if err := listNS(t, c); err != nil {
		t.Fatalf("listing after the second rotation: %v", err)
	}
	noSecrets(t, err.Error())
	noSecrets(t, logs.String())
}

// A token that arrives with the 401 renewal path: the file was rewritten
// in place (same inode, same size, same second), which the change check
// can miss; the 401 makes reactor read it again.
func TestRESTTokenFileReadAgainOn401(t *testing.T) {
	f := newAuthFront(t)
	f.accept("file-token-1")
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("file-token-1"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c := openFront(t, f, map[string]string{TokenFileProperty: path}, &logs)
	if err := listNS(t, c); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("file-token-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	f.revokeAll()
	f.accept("file-token-2")
	if err := listNS(t, c); err != nil {
		t.Fatalf("listing after the token was rewritten in place: %v", err)
	}
	if _, refused := f.counts(); refused != 1 {
		t.Errorf("%d refused, want 1 (the old token once, then the file read again)", refused)
	}
	noSecrets(t, logs.String())
}

// Settings reactor refuses before connecting.
func TestRESTAuthConfigErrors(t *testing.T) {
	f := newAuthFront(t)
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"two sources", map[string]string{TokenFileProperty: empty, "token": "x"}, "a rest catalog takes one of reactor.rest.token-file (--catalog-token-file), token and credential, got 2 of them"},
		{"missing file", map[string]string{TokenFileProperty: "/nonexistent/token"}, "reactor.rest.token-file: read the token file: stat /nonexistent/token: no such file or directory"},
		{"empty file", map[string]string{TokenFileProperty: empty}, "reactor.rest.token-file: the token file " + empty + " is empty"},
		{"sigv4 and a token file", map[string]string{TokenFileProperty: empty, "rest.sigv4-enabled": "true"}, "reactor.rest.token-file and rest.sigv4-enabled both set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := iceberg.Properties{"type": TypeREST, "uri": f.srv.URL}
			for k, v := range tc.props {
				p[k] = v
			}
			_, err := Open(t.Context(), Config{Name: "lake", Props: p, MetadataCacheBytes: -1, Logger: slog.New(slog.DiscardHandler)})
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v\nwant a configuration error with %q", err, tc.want)
			}
		})
	}
	if logins, refused := f.counts(); logins != 0 || refused != 0 {
		t.Errorf("%d logins, %d requests: a configuration error must not reach the catalog", logins, refused)
	}
}

// SigV4 (the Glue and S3 Tables REST endpoints): reactor leaves the
// signing to iceberg-go, with credentials from the AWS SDK's chain (here
// the environment); every request reaches the server signed for the
// signing name and region given. The stand-in checks the signature's
// scope, not its value (AWS would).
func TestRESTSigV4SignsWithTheAWSChain(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDREACTORTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "reactor-sigv4-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_REGION", "us-east-1")
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/config":
			_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
		default:
			_, _ = w.Write([]byte(`{"namespaces":[["db"]]}`))
		}
	}))
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	c, err := Open(t.Context(), Config{Name: "glue", MetadataCacheBytes: -1,
		Props: iceberg.Properties{"type": TypeREST, "uri": srv.URL, "rest.sigv4-enabled": "true",
			"rest.signing-name": "glue", "rest.signing-region": "eu-west-1", "warehouse": "111122223333"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := listNS(t, c); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("requests %v, want the config and the listing", seen)
	}
	for _, s := range seen {
		path, auth, _ := strings.Cut(s, " ")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDREACTORTEST/") || !strings.Contains(auth, "/eu-west-1/glue/aws4_request") {
			t.Errorf("%s went with Authorization %q, want SigV4 for glue in eu-west-1", path, auth)
		}
	}
	if strings.Contains(logs.String(), "reactor-sigv4-secret") {
		t.Errorf("the secret key in the log:\n%s", logs.String())
	}
}

// A login the token endpoint refuses fails the opening with the
// endpoint's error code, not its whole answer, and no secret.
func TestRESTOAuth2LoginRefused(t *testing.T) {
	f := newAuthFront(t)
	f.refuseLogins = true
	_, err := Open(t.Context(), Config{Name: "lake", MetadataCacheBytes: -1, Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": TypeREST, "uri": f.srv.URL, "credential": "reactor:" + frontSecret}})
	if err == nil || !strings.Contains(err.Error(), "REST catalog authentication (OAuth2 client credentials from ") ||
		!strings.Contains(err.Error(), "the token endpoint refused the login (HTTP 401): invalid_client client authentication failed") {
		t.Fatalf("Open with a refused login: %v", err)
	}
	noSecrets(t, err.Error())
}
