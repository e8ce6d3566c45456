package scenarios

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
)

// thresholds make a busy table's jobs come within the scenarios' minutes:
// compaction once a partition has 4 small files, expiry above 30
// snapshots (down to 15, keeping 5), deletion of what expiry unlinked at
// once. Orphan cleanup waits its usual 3 days: the tables are newer.
const thresholds = `defaults:
  target_file_size: 64MiB
  small_file_count: 4
  min_input_files: 2
  quiet_period: 0s
  cooldown: 0s
  snapshot_count: 30
  retain_last: 5
  min_reader_margin: 0s
  manifest_count: 20
`

// reactorRun is one `reactor run` process with its own NATS server (an
// embedded one in the test process: every scenario's reactor is a fleet
// of its own).
type reactorRun struct {
	name     string
	proc     *process
	nats     *embedded.NATS
	conn     *nats.Conn
	js       jetstream.JetStream
	httpAddr string
	catalog  string
}

// startReactor starts reactor run against the catalog its flags name
// (catalogName is --catalog-name, what the commit events say) and, unless
// waitReady is false, waits until /readyz answers 200.
func (s *suite) startReactor(t *testing.T, name, catalogName string, catalogFlags []string, waitReady bool, extra ...string) *reactorRun {
	t.Helper()
	dir := filepath.Join(s.work, "reactor-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	r := &reactorRun{name: name, nats: ns, catalog: catalogName}
	t.Cleanup(func() { r.close(t) })
	th := filepath.Join(dir, "thresholds.yaml")
	if err := os.WriteFile(th, []byte(thresholds), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	r.httpAddr = "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{s.reactorBin, "run", "--nats-url", ns.URL(), "--data-dir", filepath.Join(dir, "data"),
		"--http-addr", r.httpAddr, "--status-addr", "", "--notification-subject", "", "--replica", name,
		"--thresholds", th, "--catalog-name", catalogName}, catalogFlags...)
	args = append(args, extra...)
	if r.proc, err = s.procs.start("reactor-"+name, args, baseEnv(), filepath.Join(dir, "reactor.log")); err != nil {
		t.Fatal(err)
	}
	if r.conn, err = nats.Connect(ns.URL()); err != nil {
		t.Fatal(err)
	}
	if r.js, err = jetstream.New(r.conn); err != nil {
		t.Fatal(err)
	}
	if waitReady {
		r.waitReady(t, readyTimeout)
	}
	return r
}

// waitReady waits until /readyz answers 200 (and the commit stream exists).
func (r *reactorRun) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		code, body := r.get("/readyz")
		if code == http.StatusOK {
			return
		}
		if r.proc.exited() {
			t.Fatalf("reactor %s exited: %v\n%s", r.name, r.proc.waitErr, r.proc.tail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("reactor %s not ready after %s: %d %s\n%s", r.name, limit, code, body, r.proc.tail(40))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitUnready waits until /readyz answers 503 with reason in its body, and
// returns the body; reactor exiting fails the test.
func (r *reactorRun) waitUnready(t *testing.T, reason string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		code, body := r.get("/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, reason) {
			return body
		}
		if r.proc.exited() {
			t.Fatalf("reactor %s exited: %v\n%s", r.name, r.proc.waitErr, r.proc.tail(30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("reactor %s /readyz: %d %q after %s, want 503 with %q", r.name, code, body, limit, reason)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// get fetches path from reactor's HTTP listener (0 when it does not answer).
func (r *reactorRun) get(path string) (int, string) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + r.httpAddr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metric reads one sample of /metrics: name with labels (a subset), or the
// sum over every sample matching them.
func (r *reactorRun) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	code, body := r.get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("reactor %s /metrics: %d %s", r.name, code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	sum := 0.0
	for _, m := range families[name].GetMetric() {
		match := true
		for k, v := range labels {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// jobs is reactor_jobs_total by kind and outcome.
func (r *reactorRun) jobs(t *testing.T, kind, outcome string) float64 {
	t.Helper()
	labels := map[string]string{"outcome": outcome}
	if kind != "" {
		labels["kind"] = kind
	}
	return r.metric(t, "reactor_jobs_total", labels)
}

// publish sends the commit event of a writer's snapshot, as a streaming
// writer's notifier would.
func (r *reactorRun) publish(ctx context.Context, namespace, table string, snapshotID int64) error {
	ev := events.CommitEvent{Catalog: r.catalog, Namespace: namespace, Table: table, SnapshotID: snapshotID, Operation: "append"}
	data, err := ev.Encode()
	if err != nil {
		return err
	}
	_, err = r.js.Publish(ctx, "iceberg.commits."+namespace+"."+table, data,
		jetstream.WithMsgID(fmt.Sprintf("%s.%s.%d", namespace, table, snapshotID)))
	return err
}

// stop sends SIGTERM and checks reactor exits cleanly.
func (r *reactorRun) stop(t *testing.T) {
	t.Helper()
	if err := r.proc.stop(time.Minute); err != nil {
		t.Errorf("reactor %s: %v\n%s", r.name, err, r.proc.tail(30))
	}
}

func (r *reactorRun) close(t *testing.T) {
	if r.proc != nil && !r.proc.exited() {
		_ = r.proc.stop(30 * time.Second)
	}
	if r.conn != nil {
		r.conn.Close()
	}
	r.nats.Shutdown()
}

// readFile is a file's content ("" when it cannot be read).
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(data)
}

func itoa(i int) string { return strconv.Itoa(i) }

// discovered matches the log line of a discovery that found tables.
var discovered = regexp.MustCompile(`"msg":"tables discovered","tables":[1-9]`)

// waitLog waits until reactor's log matches re.
func (r *reactorRun) waitLog(t *testing.T, re *regexp.Regexp, limit time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !re.MatchString(readFile(t, r.proc.logPath)) {
		if time.Now().After(deadline) {
			t.Fatalf("reactor %s: no %s in its log after %s\n%s", r.name, what, limit, r.proc.tail(30))
		}
		time.Sleep(250 * time.Millisecond)
	}
}
