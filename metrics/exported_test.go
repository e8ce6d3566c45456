package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
)

// exercised is a Metrics with one value in every collector that has labels
// nobody knows in advance, so each family appears in a gather.
func exercised(t *testing.T) *metrics.Metrics {
	t.Helper()
	m := metrics.New()
	m.CommitConflicts.WithLabelValues("db.t")
	m.CommitRetries.WithLabelValues("db.t")
	m.StateRebuilds.WithLabelValues("db.t")
	m.FilesRewritten.WithLabelValues("db.t")
	m.FilesAdded.WithLabelValues("db.t")
	m.Objects.WithLabelValues("commit")
	m.UnconfirmedFiles.WithLabelValues("db.t")
	m.DataFiles.WithLabelValues("db.t")
	m.SmallFiles.WithLabelValues("db.t")
	m.IdealDataFiles.WithLabelValues("db.t")
	m.OrphanCandidates.WithLabelValues("db.t")
	m.OrphansRefused.WithLabelValues("db.t", "hidden")
	m.DeletionsRefused.WithLabelValues("db.t", "outside_table")
	m.RecordsRefused.WithLabelValues("db.t", "unsigned")
	m.DeleteFiles.WithLabelValues("db.t", "position")
	m.DeleteFileRatio.WithLabelValues("db.t")
	m.JobDuration.WithLabelValues("compact").Observe(1)
	m.JobQueueWait.WithLabelValues("compact").Observe(1)
	m.JobQueue.WithLabelValues("urgent")
	m.EventsForwarded.WithLabelValues("commit")
	m.SetSnapshots("db.t", 3, time.Now().Add(-time.Hour))
	m.SetRefreshSource(func() metrics.RefreshState { return metrics.RefreshState{Lag: map[string]float64{"db.t": 2}} })
	m.SetCatalogCallSource(func() map[string]int64 { return map[string]int64{"load": 3} })
	m.SetLeaseOwnerSource(func() map[int]string { return map[int]string{0: "r0"} })
	return m
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// Every metric docs/operations.md lists is served on /metrics: a collector
// created but not registered is documented and never exported (twelve were,
// until this test).
func TestDocumentedMetricsAreExported(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `reactor_") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, name := range regexp.MustCompile("`(reactor_[a-z_]+)`").FindAllStringSubmatch(first, -1) {
			documented[name[1]] = true
		}
	}
	if len(documented) < 30 {
		t.Fatalf("found %d metrics in docs/operations.md's table, want the whole table", len(documented))
	}
	body := scrape(t, exercised(t).Handler(func(context.Context) error { return nil }))
	for name := range documented {
		if !strings.Contains(body, "\n# TYPE "+name+" ") {
			t.Errorf("%s is documented but not on /metrics", name)
		}
	}
}

func TestObjectOutcomesArePlannersOutcomes(t *testing.T) {
	for _, o := range []planner.ObjectOutcome{planner.ObjectCommit, planner.ObjectTracked, planner.ObjectConfirmed,
		planner.ObjectRemoved, planner.ObjectIgnored, planner.ObjectRefused, planner.ObjectHeld, planner.ObjectOutside,
		planner.ObjectUntrackable} {
		if !slices.Contains(metrics.ObjectOutcomes, string(o)) {
			t.Errorf("planner's object outcome %q is not in metrics.ObjectOutcomes", o)
		}
	}
	if len(metrics.ObjectOutcomes) != 9 {
		t.Errorf("metrics.ObjectOutcomes = %v, planner has 9", metrics.ObjectOutcomes)
	}
}

// Counters whose label values are known exist at 0 from the start, so the
// first increment shows in increase() and "never happened" reads 0, not
// absent.
func TestKnownCountersStartAtZero(t *testing.T) {
	m := metrics.New()
	body := scrape(t, m.Handler(func(context.Context) error { return nil }))
	for _, series := range []string{
		`reactor_config_reloads_total{result="error"} 0`,
		`reactor_config_reloads_total{result="internal_error"} 0`,
		`reactor_jobs_total{kind="compact",outcome="failed"} 0`,
		`reactor_jobs_total{kind="remove_orphans",outcome="gave_up"} 0`,
		`reactor_jobs_scheduled_total{kind="sort"} 0`,
		`reactor_events_total{outcome="malformed",source="commit"} 0`,
		`reactor_events_total{outcome="malformed",source="notification"} 0`,
		`reactor_events_total{outcome="dead_letter_failed",source="commit"} 0`,
		`reactor_refreshes_total{result="error"} 0`,
		`reactor_lease_handovers_total{event="lost"} 0`,
		`reactor_spark_local_runs_total{reason="spark_failed"} 0`,
		`reactor_spark_interrupts_total{why="timeout"} 0`,
		`reactor_lease_shards 0`,
		`reactor_jobs_running 0`,
		`reactor_events_coalesced_total 0`,
		`reactor_objects_total{outcome="tracking_full"} 0`,
		`reactor_events_forwarded_total{source="notification"} 0`,
	} {
		if !strings.Contains(body, "\n"+series+"\n") {
			t.Errorf("missing %s", series)
		}
	}
	// Incrementing a started series is what callers do: no second series.
	m.ConfigReloads.WithLabelValues("error").Inc()
	if n := testutil.CollectAndCount(m.ConfigReloads); n != 3 {
		t.Errorf("reactor_config_reloads_total has %d series, want 3", n)
	}
}

func TestReadyGaugeAsksAtScrapeTime(t *testing.T) {
	var notReady error
	h := metrics.New().Handler(func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("readiness asked without a deadline")
		}
		return notReady
	})
	if body := scrape(t, h); !strings.Contains(body, "\nreactor_ready 1\n") {
		t.Errorf("ready: want reactor_ready 1 in\n%s", body)
	}
	notReady = errors.New("not connected to NATS")
	if body := scrape(t, h); !strings.Contains(body, "\nreactor_ready 0\n") {
		t.Errorf("not ready: want reactor_ready 0")
	}
}
