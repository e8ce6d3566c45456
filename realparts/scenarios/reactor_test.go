package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/triggers"
)

// reactorProc is one scenario's `reactor run`: the real binary, configured
// through the environment as docker-compose.yml configures it, plus the
// scenario's thresholds. It can be stopped and started again (scenario 4).
type reactorProc struct {
	t          *testing.T
	s          *suite
	dir        string
	thresholds string
	p          *process
	httpAddr   string
	starts     int
	// extra is appended to the environment (later values win): the
	// cluster scenarios' NATS URL list, stream replicas and replica name.
	extra []string
}

// newReactor prepares a reactor for the scenario with the given thresholds
// file content; start runs it.
func (s *suite) newReactor(t *testing.T, thresholdsYAML string) *reactorProc {
	t.Helper()
	dir := filepath.Join(s.work, sanitize(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	th := filepath.Join(dir, "thresholds.yaml")
	if err := os.WriteFile(th, []byte(thresholdsYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &reactorProc{t: t, s: s, dir: dir, thresholds: th}
	t.Cleanup(func() {
		if r.p != nil && !r.p.exited() {
			r.stop()
		}
	})
	return r
}

func sanitize(name string) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(name)
}

// env is reactor run's environment: the settings' reactor env and run env,
// plus this scenario's address, thresholds and data directory.
func (r *reactorProc) env() []string {
	r.t.Helper()
	all := map[string]string{}
	for k, v := range r.s.settings.Reactor.Env {
		all[k] = v
	}
	for k, v := range r.s.settings.Reactor.RunEnv {
		all[k] = v
	}
	env, err := render(all, r.s.vars)
	if err != nil {
		r.t.Fatal(err)
	}
	return append(append(append(baseEnv(), env...),
		"REACTOR_HTTP_ADDR="+r.httpAddr,
		// The status pages on a port of their own, free (several reactors
		// run at once).
		"REACTOR_STATUS_ADDR=127.0.0.1:0",
		"REACTOR_THRESHOLDS="+r.thresholds,
		"REACTOR_DATA_DIR="+filepath.Join(r.dir, "data"),
		"REACTOR_LOG_LEVEL=debug",
	), r.extra...)
}

// start runs reactor and waits until it consumes: /readyz answers 200 and
// it logged that it runs (its streams and consumers exist by then).
func (r *reactorProc) start() {
	r.t.Helper()
	port, err := freePort()
	if err != nil {
		r.t.Fatal(err)
	}
	r.httpAddr = "127.0.0.1:" + strconv.Itoa(port)
	r.starts++
	logPath := filepath.Join(r.dir, fmt.Sprintf("reactor-%d.log", r.starts))
	p, err := r.s.procs.start("reactor", []string{r.s.reactorBin, "run"}, r.env(), logPath)
	if err != nil {
		r.t.Fatal(err)
	}
	r.p = p
	if err := waitHTTP(context.Background(), p, "http://"+r.httpAddr+"/readyz"); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(readyTimeout)
	for !strings.Contains(readFile(logPath), `"msg":"reactor running`) {
		if p.exited() || time.Now().After(deadline) {
			r.t.Fatalf("reactor did not come up\n%s", p.tail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and expects a clean exit within the shutdown grace.
func (r *reactorProc) stop() {
	r.t.Helper()
	if err := r.p.stop(45 * time.Second); err != nil {
		r.t.Errorf("reactor did not stop cleanly: %v\n%s", err, r.p.tail(40))
	}
}

// logs is everything this reactor logged, across its starts.
func (r *reactorProc) logs() string {
	var b strings.Builder
	for i := 1; i <= r.starts; i++ {
		b.WriteString(readFile(filepath.Join(r.dir, fmt.Sprintf("reactor-%d.log", i))))
	}
	return b.String()
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// metric reads one counter or gauge from /metrics (0 when the series does
// not exist yet: counters appear with their first increment).
func (r *reactorProc) metric(name string, labels map[string]string) float64 {
	r.t.Helper()
	v, err := scrapeMetric(r.httpAddr, name, labels)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

// scrapeMetric is metric for any reactor's address, returning the error
// (a background scraper must not fail the test from its goroutine).
func scrapeMetric(addr, name string, labels map[string]string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("scrape reactor: %w", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("parse /metrics: %w", err)
	}
	fam, ok := families[name]
	if !ok {
		return 0, nil
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		match := true
		for _, lp := range m.GetLabel() {
			if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
				match = false
			}
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
	return sum, nil
}

// jobWatch collects the job events reactor publishes for one table.
type jobWatch struct {
	mu     sync.Mutex
	events []events.JobEvent
	sub    *nats.Subscription
}

// watchJobs subscribes to every job event of table (namespace.table).
func (s *suite) watchJobs(t *testing.T, table string) *jobWatch {
	t.Helper()
	w := &jobWatch{}
	sub, err := s.conn.Subscribe(events.DefaultJobSubjectPrefix+".*."+table, func(m *nats.Msg) {
		var ev events.JobEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Errorf("undecodable job event on %s: %v", m.Subject, err)
			return
		}
		w.mu.Lock()
		w.events = append(w.events, ev)
		w.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Flush(); err != nil {
		t.Fatal(err)
	}
	w.sub = sub
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return w
}

// finished are the terminal job events, optionally of one kind.
func (w *jobWatch) finished(kind string) []events.JobEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []events.JobEvent
	for _, ev := range w.events {
		if ev.Terminal() && (kind == "" || ev.Kind == kind) {
			out = append(out, ev)
		}
	}
	return out
}

// scheduled are the scheduled events of one kind.
func (w *jobWatch) scheduled(kind string) []events.JobEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []events.JobEvent
	for _, ev := range w.events {
		if ev.Phase == events.JobScheduled && ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// succeeded counts the jobs of kind that committed (outcome succeeded).
func (w *jobWatch) succeeded(kind string) int {
	n := 0
	for _, ev := range w.finished(kind) {
		if ev.Outcome == "succeeded" {
			n++
		}
	}
	return n
}

// failures are the jobs that failed (not gave up on conflicts: failed).
func (w *jobWatch) failures() []events.JobEvent {
	return slices.DeleteFunc(w.finished(""), func(ev events.JobEvent) bool { return ev.Phase != events.JobFailed || ev.Outcome == "gave_up" })
}

// summary is one line per finished job, for logs and failure messages.
func (w *jobWatch) summary() string {
	var b strings.Builder
	for _, ev := range w.finished("") {
		fmt.Fprintf(&b, "  %s %s %v: %s attempts=%d conflicts=%d counts=%v %s\n", ev.Kind, ev.JobID[:8], ev.Partitions,
			ev.Outcome, ev.Attempts, ev.Conflicts, ev.Counts, ev.Error)
	}
	return b.String()
}

// resetStreams deletes reactor's streams so a scenario's reactor starts
// from nothing, as on a fresh NATS server: streams outlive a reactor.
func (s *suite) resetStreams(t *testing.T) {
	t.Helper()
	for _, name := range []string{triggers.DefaultCommitStream, triggers.DefaultDeadLetterStream, triggers.DefaultNotificationStream} {
		_ = s.js.DeleteStream(context.Background(), name)
	}
}

// eventually polls cond until it holds. The deadline is a hang guard, far
// above what any condition needs; it is not a performance assertion.
func eventually(t *testing.T, what string, limit time.Duration, cond func() bool, diag func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if diag != nil {
				msg = diag()
			}
			t.Fatalf("gave up waiting (%s) for: %s\n%s", limit, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
