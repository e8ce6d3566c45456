package worker

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
)

// get fetches url with an optional Authorization header; it returns the
// status and body.
func get(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// 1,000 scrapes of /metrics and 1,000 of /readyz make no catalog call:
// readiness is kept fresh in the background. The catalog going down shows
// on /readyz by the next background check, and coming back too.
func TestScrapesMakeNoCatalogCall(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	var counted *countingCatalog
	h.workerCfg = func(c *Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.ReadinessEvery = time.Hour // no background check during the scrapes
		c.LocationRefresh = time.Hour
		c.wrapCatalog = func(cat catalog.Catalog) catalog.Catalog { counted = countCalls(cat); return counted }
	}
	w := h.start()
	base := "http://" + w.HTTPAddr()
	h.eventually("ready", func() bool { code, _ := get(t, base+"/readyz", ""); return code == http.StatusOK })
	h.eventually("tables discovered", func() bool { return strings.Contains(h.logs.String(), "tables discovered") })
	// Start-up's catalog calls (discovery again after the leases, the
	// location index) settle: no call for a second.
	last, still := -1, time.Now()
	h.eventually("the start-up's catalog calls to end", func() bool {
		if n, _ := counted.total(); n != last {
			last, still = n, time.Now()
		}
		return time.Since(still) > time.Second
	})
	before, byBefore := counted.total()
	for range 1000 {
		if code, body := get(t, base+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, "\nreactor_ready 1\n") {
			t.Fatalf("/metrics: %d, reactor_ready 1 missing", code)
		}
		if code, _ := get(t, base+"/readyz", ""); code != http.StatusOK {
			t.Fatalf("/readyz: %d", code)
		}
	}
	if after, byAfter := counted.total(); after != before {
		t.Fatalf("2,000 requests made %d catalog calls (%v before, %v after)", after-before, byBefore, byAfter)
	}
	t.Logf("catalog calls before and after 2,000 requests: %d (%v)", before, byBefore)

	// A catalog that goes down: the next background check says so.
	h2 := newHarness(t, testThresholds, nil)
	h2.workerCfg = func(c *Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.ReadinessEvery = 100 * time.Millisecond
		c.wrapCatalog = func(cat catalog.Catalog) catalog.Catalog { counted = countCalls(cat); return counted }
	}
	w2 := h2.start()
	base2 := "http://" + w2.HTTPAddr()
	h2.eventually("ready", func() bool { code, _ := get(t, base2+"/readyz", ""); return code == http.StatusOK })
	counted.down.Store(true)
	h2.eventually("not ready: catalog down", func() bool {
		code, body := get(t, base2+"/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "catalog unreachable") && strings.Contains(body, "connection refused")
	})
	counted.down.Store(false)
	h2.eventually("ready again", func() bool { code, _ := get(t, base2+"/readyz", ""); return code == http.StatusOK })
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// Clients that connect and send nothing, or send half a request, hold
// neither a goroutine nor a descriptor of the worker's listeners past the
// timeouts: the server drops them (each client sees its connection
// closed), and once the clients are gone the process has the goroutines
// and descriptors it had before.
func TestSilentClientsAreDropped(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	limits := HTTPLimits{ReadHeader: 300 * time.Millisecond, Read: 500 * time.Millisecond, Write: 500 * time.Millisecond, Idle: 500 * time.Millisecond}
	h.workerCfg = func(c *Config) {
		c.HTTPAddr, c.StatusAddr, c.HTTPLimits = "127.0.0.1:0", "127.0.0.1:0", limits
	}
	w := h.start()
	h.eventually("ready", func() bool { code, _ := get(t, "http://"+w.HTTPAddr()+"/readyz", ""); return code == http.StatusOK })
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(limits.Idle + 200*time.Millisecond) // the probes' kept-alive connections end
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	var conns []net.Conn
	for i := range 120 {
		addr := w.HTTPAddr()
		if i%2 == 1 {
			addr = w.StatusAddr()
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 1: // half a request line
			fmt.Fprint(c, "GET /metr")
		case 2: // headers never finished
			fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
		}
		conns = append(conns, c)
	}
	// The server drops every one: a read sees the connection end (EOF,
	// or a 408 and then EOF) well within its deadline.
	for i, c := range conns {
		if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("connection %d was not closed by the server: %v", i, err)
		}
		c.Close()
	}
	// Nothing of theirs remains (a few goroutines of the worker's own
	// may come and go: a small margin).
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, f := runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines+5 && f <= fds+2 {
			t.Logf("goroutines %d -> %d, descriptors %d -> %d after 120 silent clients", goroutines, g, fds, f)
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines %d -> %d, descriptors %d -> %d\n%s", goroutines, g, fds, f, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A client that asks for a response and reads nothing is dropped after
// the write timeout: the handler's write fails, its goroutine ends.
func TestNonReadingClientIsDropped(t *testing.T) {
	written := make(chan error, 1)
	big := strings.Repeat("x", 1<<20)
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		for i := 0; i < 256 && err == nil; i++ { // 256 MiB: far beyond the socket buffers
			_, err = io.WriteString(w, big)
		}
		written <- err
	}), HTTPLimits{Write: 500 * time.Millisecond}.withDefaults(8))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-written:
		if err == nil {
			t.Fatal("256 MiB written to a client that reads nothing")
		}
		t.Logf("the handler's write failed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the handler is still writing to a client that reads nothing")
	}
}

// The status pages on a listener of their own, with a token: nothing
// without it (401 asking for basic auth), the pages with it as a Bearer
// token or as basic auth's password; refusals counted. The metrics
// listener serves no page.
func TestStatusPagesNeedTheToken(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	token := "tok-0123456789abcdef0123"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.workerCfg = func(c *Config) { c.HTTPAddr, c.StatusAddr, c.StatusTokenFile = "127.0.0.1:0", "127.0.0.1:0", file }
	w := h.start()
	pages, metricsBase := "http://"+w.StatusAddr(), "http://"+w.HTTPAddr()
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for _, tt := range []struct {
		name, auth string
		want       int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong bearer", "Bearer nope-0123456789abcdef", http.StatusUnauthorized},
		{"wrong password", basic("ops", "nope"), http.StatusUnauthorized},
		{"bearer", "Bearer " + token, http.StatusOK},
		{"basic", basic("anyone", token), http.StatusOK},
	} {
		for _, path := range []string{"/", "/jobs", "/tables/db.events"} {
			code, body := get(t, pages+path, tt.auth)
			if code != tt.want && !(code == http.StatusNotFound && path == "/tables/db.events" && tt.want == http.StatusOK) {
				t.Errorf("%s %s: %d, want %d\n%s", tt.name, path, code, tt.want, body)
			}
			if code == http.StatusUnauthorized && strings.Contains(body, "db.events") {
				t.Errorf("%s %s: a refusal shows the page: %s", tt.name, path, body)
			}
		}
	}
	if code, _ := get(t, metricsBase+"/", ""); code != http.StatusNotFound {
		t.Errorf("/ on the metrics listener: %d, want 404", code)
	}
	_, metrics := get(t, metricsBase+"/metrics", "")
	for _, want := range []string{`reactor_status_requests_refused_total{reason="no_credentials"} 3`, `reactor_status_requests_refused_total{reason="wrong_token"} 6`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, err := http.Get(pages + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Basic ") {
		t.Errorf("WWW-Authenticate %q", got)
	}
}

// A table page's read of the table is kept while the table's snapshot
// does not move: 20 views cost one load of the table; a commit makes the
// next view read it again.
func TestTablePageReadsATableOncePerSnapshot(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	var counted *countingCatalog
	h.workerCfg = func(c *Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.wrapCatalog = func(cat catalog.Catalog) catalog.Catalog { counted = countCalls(cat); return counted }
	}
	w := h.start()
	h.commit("a", 10)
	h.eventually("the commit applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		return snap == h.load().CurrentSnapshot().SnapshotID
	})
	page := "http://" + w.HTTPAddr() + "/tables/db.events"
	loads := func() int { _, by := counted.total(); return by["LoadTable"] }
	before := loads()
	for range 20 {
		if code, body := get(t, page, ""); code != http.StatusOK || !strings.Contains(body, "category=a") {
			t.Fatalf("table page: %d\n%s", code, body)
		}
	}
	if n := loads() - before; n != 1 {
		t.Errorf("20 views of the table page loaded the table %d times, want 1", n)
	}
	h.commit("a", 10)
	h.eventually("the second commit applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		return snap == h.load().CurrentSnapshot().SnapshotID
	})
	before = loads()
	if code, _ := get(t, page, ""); code != http.StatusOK {
		t.Fatalf("table page: %d", code)
	}
	if n := loads() - before; n != 1 {
		t.Errorf("a view after a commit loaded the table %d times, want 1", n)
	}
}
