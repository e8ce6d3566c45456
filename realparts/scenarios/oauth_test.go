package scenarios

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/streamwriter"
)

// oauthFront is a test-only STAND-IN in front of the real REST catalog: an
// OAuth2 client-credentials token endpoint whose tokens live lifetime, and
// a bearer-token check on every other request, which it then passes to the
// reference catalog unchanged. The catalog and its commits are real; only
// the authentication is the front's.
type oauthFront struct {
	srv      *httptest.Server
	lifetime time.Duration

	mu      sync.Mutex
	valid   map[string]time.Time // token -> expiry
	logins  int
	refused int
	passed  int
}

const oauthSecret = "realparts-oauth-client-secret"

func startOAuthFront(t *testing.T, catalogURI string, lifetime time.Duration) *oauthFront {
	t.Helper()
	target, err := url.Parse(catalogURI)
	if err != nil {
		t.Fatal(err)
	}
	f := &oauthFront{lifetime: lifetime, valid: map[string]time.Time{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/oauth/tokens" {
			f.login(w, r)
			return
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		exp, ok := f.valid[tok]
		ok = ok && time.Now().Before(exp)
		if ok {
			f.passed++
		} else {
			f.refused++
		}
		f.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"token expired or revoked","type":"NotAuthorizedException","code":401}}`))
			return
		}
		r.Header.Del("Authorization") // the reference catalog runs without authentication
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *oauthFront) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if err := r.ParseForm(); err != nil || r.PostForm.Get("client_id") != "reactor" || r.PostForm.Get("client_secret") != oauthSecret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	f.mu.Lock()
	f.logins++
	tok := fmt.Sprintf("realparts-token-%d", f.logins)
	f.valid[tok] = time.Now().Add(f.lifetime)
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "bearer",
		"expires_in": int(f.lifetime / time.Second)})
}

// revoke invalidates every token given so far, as a server that revoked
// them before their expiry.
func (f *oauthFront) revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.valid = map[string]time.Time{}
}

func (f *oauthFront) counts() (logins, refused, passed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logins, f.refused, f.passed
}

// Scenario: reactor run against the real REST catalog behind an OAuth2
// front whose tokens live 20 s. Over a run of two minutes, a streamwriter
// committing beside it, its tokens expire several times and are renewed
// before they do; then the front revokes them all (the next request is a
// 401) and reactor logs in again, its refused requests followed by ones
// that pass. Compactions before, during and after succeed, rows exact, no
// job fails (job events and reactor_jobs_total), and neither the client
// secret nor a token appears in reactor's log.
func TestOAuth2TokensRenewedDuringARun(t *testing.T) {
	s := need(t)
	s.resetStreams(t)
	front := startOAuthFront(t, s.catalogURI, 20*time.Second)
	l := s.openLake(t, "oauth", "events")
	l.createTable(nil)
	jobs := s.watchJobs(t, l.name)
	r := s.newReactor(t, scenarioThresholds("oauth", ""))
	r.extra = []string{
		"REACTOR_CATALOG_URI=" + front.srv.URL,
		"REACTOR_CATALOG_PROP=s3.endpoint=" + s.vars["s3_endpoint"] + ",s3.region=us-east-1,s3.force-virtual-addressing=false," +
			"credential=reactor:" + oauthSecret,
	}
	r.start()
	diag := func() string {
		logins, refused, passed := front.counts()
		return fmt.Sprintf("front: %d logins, %d refused, %d passed\n%s%s", logins, refused, passed, jobs.summary(), r.p.tail(60))
	}
	w := streamwriter.New(l.cat, l.ident, nil)
	rows := newIDs()
	compactions := 0
	round := func(category, what string) {
		t.Helper()
		for range 5 { // small_file_count: 5
			rows.commit(t, w, category, 10)
		}
		compactions++
		eventually(t, what, 2*time.Minute, func() bool { return jobs.succeeded("compact") >= compactions }, diag)
	}
	runStart := time.Now()
	round("a", "the first compaction")
	// A streamwriter commits beside the run, a file every 3 s into its own
	// partition (a compaction every five), until the run has lasted two
	// minutes: six token lifetimes, each token renewed before it expires
	// by reactor's calls (the readiness probe's listing every 15 s, the
	// jobs').
	for time.Since(runStart) < 2*time.Minute {
		rows.commit(t, w, "d", 10)
		time.Sleep(3 * time.Second)
	}
	if logins, _, _ := front.counts(); logins < 4 {
		t.Fatalf("%d logins over two minutes of 20 s tokens; want renewals before expiry\n%s", logins, diag())
	}
	eventually(t, "the side partition's compactions", 2*time.Minute, func() bool { return jobs.succeeded("compact") >= compactions+1 }, diag)
	compactions = jobs.succeeded("compact")
	start := runStart
	round("b", "a compaction after the tokens expired and were renewed")
	// Revoked just after a login, so that reactor's next requests (round
	// c's) carry the revoked token rather than one it renewed early.
	loginsNow, _, _ := front.counts()
	eventually(t, "a token renewal to revoke right after", time.Minute, func() bool {
		logins, _, _ := front.counts()
		return logins > loginsNow
	}, diag)
	front.revoke()
	_, refusedAtRevoke, passedAtRevoke := front.counts()
	round("c", "a compaction after the front revoked every token")
	if _, refusedNow, passedNow := front.counts(); refusedNow <= refusedAtRevoke || passedNow <= passedAtRevoke {
		t.Errorf("after the revocation: %d refused, %d passed; want refusals followed by requests that passed\n%s",
			refusedNow-refusedAtRevoke, passedNow-passedAtRevoke, diag())
	}
	l.checkRows(w.Written())
	logins, refused, passed := front.counts()
	t.Logf("over %s: %d logins, %d requests refused, %d passed to the catalog", time.Since(start).Round(time.Second), logins, refused, passed)
	if refused < 1 {
		t.Errorf("the front refused no request after revoking the tokens; the 401 path was not exercised\n%s", diag())
	}
	if logins < 5 {
		t.Errorf("%d logins; want at least 5 (the first, three renewals, one after the revocation)\n%s", logins, diag())
	}
	if f := jobs.failures(); len(f) > 0 {
		t.Errorf("jobs failed:\n%s", jobs.summary())
	}
	if failed := r.metric("reactor_jobs_total", map[string]string{"outcome": "failed"}); failed != 0 {
		t.Errorf("reactor_jobs_total{outcome=failed} = %v; want 0\n%s", failed, diag())
	}
	logs := r.logs()
	if strings.Contains(logs, oauthSecret) || strings.Contains(logs, "realparts-token-") {
		t.Errorf("the client secret or a token is in reactor's log")
	}
	if !strings.Contains(logs, "REST catalog token renewed") {
		t.Errorf("reactor never logged a token renewal\n%s", diag())
	}
	r.stop()
}
