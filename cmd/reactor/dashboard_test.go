package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// noSeriesInThisRun are the metrics the dashboard or the rules read that a
// single `reactor run` without bucket notifications, Spark or orphan
// cleanup does not export a series of (their only labels are tables or
// reasons nobody knows in advance). Each must still be a metric
// docs/operations.md lists, which metrics' own test ties to what reactor
// registers, so a misspelled name fails either way.
var noSeriesInThisRun = map[string]string{
	"reactor_commit_conflicts_total":  "only after a commit lost a race",
	"reactor_commit_retries_total":    "only after a commit lost a race",
	"reactor_table_orphan_candidates": "only after an orphan cleanup ran",
	"reactor_orphans_refused_total":   "only after an orphan cleanup refused a file",
	"reactor_deletions_refused_total": "only after the deletion rule kept a file",
	"reactor_records_refused_total":   "only after a record in a table's storage was refused",
	"reactor_unconfirmed_files":       "only with bucket notifications",
}

// The Grafana dashboard and the Prometheus rules, against a real
// Prometheus scraping a real `reactor run` (embedded NATS, the SQLite
// catalog) that has compacted a table and dead-lettered an event: every
// panel's query and every rule's expression parses, and every metric they
// name has series, so a panel on a misspelled or removed metric fails here.
func TestDashboardAndRulesQueriesAgainstRealPrometheus(t *testing.T) {
	prom := needTool(t, "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := filepath.Join("..", "..")
	exprs := dashboardExprs(t, filepath.Join(root, "deploy", "grafana", "dashboards", "reactor.json"))
	rules := ruleExprs(t, filepath.Join(root, "deploy", "prometheus", "rules.yml"))
	documented := documentedMetrics(t, filepath.Join(root, "docs", "operations.md"))

	dir := t.TempDir()
	f := newRunFixture(t, ctx, dir)
	srv, js, writer := f.srv, f.js, f.writer
	thresholdsFile := filepath.Join(dir, "thresholds.yaml")
	if err := os.WriteFile(thresholdsFile, []byte("defaults: {small_file_count: 5, quiet_period: 0s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	reactorAddr := freeLoopbackAddr(t)
	args, _ := json.Marshal([]string{"run", "--nats-url", srv.URL(), "--data-dir", dir, "--thresholds", thresholdsFile,
		"--http-addr", reactorAddr, "--status-addr", "", "--notification-subject", ""})
	var reactorErr syncBuffer
	reactor := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	reactor.Env = append(os.Environ(), runAsReactor+"=1", runAsReactor+"_ARGS="+string(args))
	reactor.Stderr = &reactorErr
	startCleanly(t, reactor)

	promAddr := freeLoopbackAddr(t)
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [%q]\n"+
		"scrape_configs:\n  - job_name: reactor\n    static_configs: [{targets: [%q]}]\n",
		filepath.Join(mustAbs(t, root), "deploy", "prometheus", "rules.yml"), reactorAddr)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var promErr syncBuffer
	promCmd := exec.CommandContext(ctx, prom, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	promCmd.Stderr = &promErr
	startCleanly(t, promCmd)
	api := &promAPI{t: t, base: "http://" + promAddr}
	diag := func() string {
		return fmt.Sprintf("\nreactor stderr (tail):\n%s\nprometheus stderr (tail):\n%s", tail(reactorErr.String(), 3000), tail(promErr.String(), 2000))
	}

	// Ten small files in two partitions: each reaches small_file_count and
	// is compacted; one event that is not JSON is dead-lettered.
	for i := range 10 {
		if _, err := writer.Commit(ctx, []string{"a", "b"}[i%2], 50); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(ctx, "iceberg.commits.db.events", []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`reactor_jobs_total{kind="compact",outcome="succeeded"} > 0`,
		`reactor_events_total{source="commit",outcome="malformed"} > 0`,
		`reactor_job_queue_wait_seconds_count > 0`,
		// Two scrapes after the compaction, so rate() has two points.
		`count_over_time(reactor_job_duration_seconds_count[1m]) > 1`,
	} {
		waitUntil(ctx, t, func() bool { return len(api.query(q)) > 0 }, "Prometheus to see "+q+diag())
	}
	// The refresh lag has a series once an event waited for its table's
	// refresh. The commits above may all have been read by the discovery
	// at start, their events then acknowledged as seen without one; a
	// commit now is one the planner has not seen.
	if _, err := writer.Commit(ctx, "a", 50); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, func() bool { return len(api.query("reactor_table_refresh_lag_seconds")) > 0 },
		"Prometheus to see reactor_table_refresh_lag_seconds"+diag())

	// Each expression parses and runs; each metric it names has series.
	subst := strings.NewReplacer("$__rate_interval", "1m", "${__rate_interval}", "1m", "$__range", "5m",
		"${__range}", "5m", "$__interval", "15s", "$table", "db.events", "${table}", "db.events")
	names := map[string][]string{}
	for _, e := range append(exprs, rules...) {
		expr := subst.Replace(e.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: a variable this test does not substitute in %q", e.where, e.expr)
			continue
		}
		if err := api.check(expr); err != nil {
			t.Errorf("%s: %q: %v", e.where, expr, err)
		}
		refs := metricNames(expr)
		if len(refs) == 0 {
			t.Errorf("%s: %q names no metric", e.where, expr)
		}
		for _, n := range refs {
			names[n] = append(names[n], e.where)
		}
	}
	var missing []string
	for name, where := range names {
		if api.hasSeries(name) {
			if _, listed := noSeriesInThisRun[name]; listed {
				t.Logf("%s has series after all: noSeriesInThisRun can drop it", name)
			}
			continue
		}
		if why, ok := noSeriesInThisRun[name]; ok && documented[strings.TrimSuffix(name, "_bucket")] {
			t.Logf("%s: no series here (%s)", name, why)
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (in %s)", name, strings.Join(slices.Compact(where), ", ")))
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("no series in Prometheus scraping reactor run:\n  %s%s", strings.Join(missing, "\n  "), diag())
	}
	// Prometheus evaluates the rules file itself without errors.
	for _, r := range api.rules() {
		if r.Health == "err" {
			t.Errorf("rule %s: %s", r.Name, r.LastError)
		}
	}
}

type sourcedExpr struct{ where, expr string }

// dashboardExprs returns every panel target's expression and the table
// variable's metric.
func dashboardExprs(t *testing.T, path string) []sourcedExpr {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title      string `json:"title"`
			Type       string `json:"type"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []sourcedExpr
	for _, p := range dash.Panels {
		if p.Type != "row" && p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %q, want the datasource variable", p.Title, p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s has no expression", p.Title, tg.RefID)
				continue
			}
			out = append(out, sourcedExpr{fmt.Sprintf("panel %q %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Type
		if m := regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`).FindStringSubmatch(v.Definition); m != nil {
			out = append(out, sourcedExpr{"variable " + v.Name, m[1]})
		}
	}
	if vars["datasource"] != "datasource" || vars["table"] != "query" {
		t.Errorf("dashboard variables %v: want a datasource variable datasource and a query variable table", vars)
	}
	if len(out) < 20 {
		t.Fatalf("%s: %d expressions, want every panel's", path, len(out))
	}
	return out
}

func ruleExprs(t *testing.T, path string) []sourcedExpr {
	t.Helper()
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatal(err)
	}
	var out []sourcedExpr
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out = append(out, sourcedExpr{"rule " + r.Alert + r.Record, r.Expr})
		}
	}
	return out
}

func documentedMetrics(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(reactor_[a-z_]+)`").FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = true
	}
	return out
}

var (
	labelMatchers = regexp.MustCompile(`\{[^}]*\}`)
	metricName    = regexp.MustCompile(`\b(?:reactor[_:][a-zA-Z0-9_:]*|up)\b`)
)

// metricNames lists the metrics an expression reads: reactor's (and
// recording rules', reactor:...) and up. Label matchers are dropped first,
// so a label value such as job="reactor" is not taken for one.
func metricNames(expr string) []string {
	names := metricName.FindAllString(labelMatchers.ReplaceAllString(expr, "{}"), -1)
	slices.Sort(names)
	return slices.Compact(names)
}

type promAPI struct {
	t    *testing.T
	base string
}

type promRule struct {
	Name, Health, LastError string
}

func (p *promAPI) get(path string, params url.Values, out any) error {
	resp, err := http.Get(p.base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: %s: %w", path, resp.Status, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s", body.Error)
	}
	return json.Unmarshal(body.Data, out)
}

func (p *promAPI) check(expr string) error {
	var data json.RawMessage
	return p.get("/api/v1/query", url.Values{"query": {expr}}, &data)
}

func (p *promAPI) query(expr string) []json.RawMessage {
	var data struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil
	}
	return data.Result
}

func (p *promAPI) hasSeries(name string) bool {
	var series []json.RawMessage
	if err := p.get("/api/v1/series", url.Values{"match[]": {name}, "start": {fmt.Sprint(time.Now().Add(-time.Hour).Unix())}}, &series); err != nil {
		p.t.Errorf("series %s: %v", name, err)
		return false
	}
	return len(series) > 0
}

func (p *promAPI) rules() []promRule {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", url.Values{}, &data); err != nil {
		p.t.Fatal(err)
	}
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		p.t.Error("Prometheus loaded no rules")
	}
	return out
}

// needTool returns a command-line tool's path, skipping the test when it is
// missing unless REACTOR_REQUIRE_TOOLS=1 (CI), which fails it.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("REACTOR_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s is required (REACTOR_REQUIRE_TOOLS=1) but not installed: %v", name, err)
		}
		t.Skipf("%s not installed (Debian: apt-get install prometheus); skipping", name)
	}
	return path
}

// freeLoopbackAddr returns a loopback address with a port free a moment
// ago, for a child process that takes it.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCleanly starts a child process that the test kills and waits for
// at its end.
func startCleanly(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

func waitUntil(ctx context.Context, t *testing.T, cond func() bool, what string) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
