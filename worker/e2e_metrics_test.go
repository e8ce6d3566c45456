package worker

import (
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// After an end-to-end run the scraped exposition (parsed, not grepped)
// carries the counters and gauges with the values the run implies, and
// the probes answer.
func TestMetricsEndpointAfterARun(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	h.workerCfg = func(c *Config) { c.HTTPAddr = "127.0.0.1:0" }
	w := h.start()
	for range 6 {
		h.commit("a", 10)
	}
	h.commit("b", 10)
	h.eventually("compaction", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	h.eventually("the last event applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		return snap == h.load().CurrentSnapshot().SnapshotID
	})

	base := "http://" + w.HTTPAddr()
	for _, probe := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + probe)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", probe, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		fam, ok := families[name]
		if !ok {
			t.Fatalf("metric %s missing", name)
		}
		for _, m := range fam.GetMetric() {
			if matches(m, labels) {
				switch {
				case m.GetCounter() != nil:
					return m.GetCounter().GetValue()
				case m.GetGauge() != nil:
					return m.GetGauge().GetValue()
				case m.GetHistogram() != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		t.Fatalf("metric %s%v missing", name, labels)
		return 0
	}
	files := h.files()
	// The compaction rewrites the small files present when it runs: five
	// (min_input_files) or six, as the sixth commit lands before or after
	// the quiet period ends; the metric must count what the job did.
	rewritten := float64(w.Pool.Stats().FilesRewritten)
	if rewritten < 5 || rewritten > 6 {
		t.Errorf("the compaction rewrote %v files, want 5 or 6", rewritten)
	}
	checks := []struct {
		name    string
		labels  map[string]string
		want    float64
		atLeast bool
	}{
		{"reactor_events_total", map[string]string{"source": "commit", "outcome": "applied"}, 7, true},
		{"reactor_jobs_scheduled_total", map[string]string{"kind": "compact"}, 1, false},
		{"reactor_jobs_total", map[string]string{"kind": "compact", "outcome": "succeeded"}, 1, false},
		{"reactor_job_duration_seconds", map[string]string{"kind": "compact"}, 1, false},
		{"reactor_rewritten_data_files_total", map[string]string{"table": "db.events"}, rewritten, false},
		{"reactor_added_data_files_total", map[string]string{"table": "db.events"}, 1, false},
		{"reactor_table_data_files", map[string]string{"table": "db.events"}, float64(len(files["a"]) + len(files["b"])), false},
		{"reactor_table_small_files", map[string]string{"table": "db.events"}, float64(len(files["a"]) + len(files["b"])), false},
		{"reactor_table_snapshots", map[string]string{"table": "db.events"}, float64(len(h.load().Metadata().Snapshots())), false},
		// Two partitions of a few KB each: one target-sized file each.
		{"reactor_table_ideal_data_files", map[string]string{"table": "db.events"}, 2, false},
	}
	for _, c := range checks {
		got := value(c.name, c.labels)
		if (c.atLeast && got < c.want) || (!c.atLeast && got != c.want) {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Computed at scrape time from the oldest snapshot's commit time: it
	// is positive and no older than this test.
	if age := value("reactor_table_oldest_snapshot_age_seconds", map[string]string{"table": "db.events"}); age <= 0 || age > 3600 {
		t.Errorf("oldest snapshot age = %vs, want between 0 and an hour", age)
	}
	if _, ok := families["go_goroutines"]; !ok {
		t.Errorf("Go runtime collector missing")
	}
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}
