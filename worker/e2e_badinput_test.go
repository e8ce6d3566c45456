package worker

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
)

// Malformed JSON, an unknown table and a table outside the watched
// namespaces each get a log line, a counter and a dead letter carrying the
// reason and the original payload; later events are still applied.
func TestBadEventsAreDeadLetteredAndProcessingContinues(t *testing.T) {
	cfg := testThresholds + "namespaces: [db]\n"
	h := newHarness(t, cfg, nil)
	w := h.start()

	bad := []struct {
		subject, payload, reason string
	}{
		{"iceberg.commits.db.events", `{"namespace":"db","table":`, events.ReasonMalformed},
		{"iceberg.commits.db.events", `{"namespace":"db","snapshot_id":5}`, events.ReasonMalformed},
		{"iceberg.commits.db.nosuch", `{"namespace":"db","table":"nosuch","snapshot_id":5}`, events.ReasonUnknownTable},
		{"iceberg.commits.other.events", `{"namespace":"other","table":"events","snapshot_id":5}`, events.ReasonNamespaceNotWatched},
	}
	for _, b := range bad {
		h.publishRaw(b.subject, b.payload)
	}
	// An event for another catalog is not bad input: acknowledged, counted,
	// not dead-lettered (another reactor may serve that catalog).
	h.publishRaw("iceberg.commits.db.events", `{"catalog":"elsewhere","namespace":"db","table":"events","snapshot_id":5}`)
	// A good event after the bad ones must still be applied and acted on.
	for range 6 {
		h.commit("a", 10)
	}
	h.eventually("compaction after the bad events", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	// A dead letter is stored, then counted, then logged: wait for the log
	// lines, the last of the three.
	h.eventually("four dead letters, counted and logged", func() bool {
		return len(h.deadLetters()) >= len(bad) && strings.Count(h.logs.String(), "event dead-lettered") >= len(bad)
	})

	dls := h.deadLetters()
	if len(dls) != len(bad) {
		t.Fatalf("%d dead letters, want %d: %+v", len(dls), len(bad), dls)
	}
	// Events are applied per table in parallel: dead letters come in any
	// order, one for each bad event.
	for i, b := range bad {
		found := false
		for _, dl := range dls {
			if string(dl.Payload) == b.payload {
				found = true
				if dl.Reason != b.reason || dl.Subject != b.subject || dl.Error == "" {
					t.Errorf("dead letter of bad event %d = %+v, want reason %q subject %q", i, dl, b.reason, b.subject)
				}
			}
		}
		if !found {
			t.Errorf("no dead letter for bad event %d (%s)", i, b.payload)
		}
	}
	ev := w.Metrics.Events
	for outcome, want := range map[string]float64{
		metrics.OutcomeMalformed:    2,
		metrics.OutcomeUnknownTable: 1,
		metrics.OutcomeNotWatched:   1,
		metrics.OutcomeOtherCatalog: 1,
	} {
		if got := testutil.ToFloat64(ev.WithLabelValues("commit", outcome)); got != want {
			t.Errorf("reactor_events_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
	if got := testutil.ToFloat64(ev.WithLabelValues("commit", metrics.OutcomeApplied)); got < 6 {
		t.Errorf("applied events = %v, want >= 6", got)
	}
	logs := h.logs.String()
	for _, want := range []string{"field table is required", "unknown table", "namespace not watched", "event dead-lettered"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q", want)
		}
	}
	if got := h.contents().Total; got != h.writer.Written() {
		t.Errorf("table holds %v, writer wrote %v", got, h.writer.Written())
	}
}

// A catalog whose storage is unreachable is a transient fault: no event is
// dropped or dead-lettered, the process says it is waiting, and once the
// storage is back the events are applied (and the partition compacted).
//
// The outage is real, not mocked: the warehouse directory holding the
// table's metadata files is moved away, so the SQL catalog's LoadTable fails
// reading metadata exactly as it would with object storage down.
func TestCatalogOutageRetriesWithoutLosingEvents(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	for range 6 {
		h.commit("a", 10)
	}
	// The writer's events are queued in JetStream; now take storage away
	// before reactor starts, so every one of them meets the outage.
	warehouse := h.dir + "/catalog/warehouse"
	if err := os.Rename(warehouse, warehouse+".away"); err != nil {
		t.Fatal(err)
	}
	w := h.start()
	h.eventually("retries logged", func() bool {
		return testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", metrics.OutcomeRetry)) >= 3
	})
	if !strings.Contains(h.logs.String(), "waiting for the catalog") {
		t.Errorf("logs do not say reactor is waiting for the catalog")
	}
	if n := testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", metrics.OutcomeApplied)); n != 0 {
		t.Errorf("%v events applied during the outage", n)
	}
	if err := os.Rename(warehouse+".away", warehouse); err != nil {
		t.Fatal(err)
	}
	h.eventually("events applied after recovery", func() bool {
		return testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", metrics.OutcomeApplied)) >= 6
	})
	h.eventually("compaction after recovery", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	if dls := h.deadLetters(); len(dls) != 0 {
		t.Errorf("dead letters during a transient outage: %+v", dls)
	}
	if !strings.Contains(h.logs.String(), "catalog reachable again") {
		t.Errorf("logs do not say the catalog is back")
	}
	if got := h.contents().Total; got != h.writer.Written() {
		t.Errorf("table holds %v, writer wrote %v", got, h.writer.Written())
	}
}

// Events delivered while reactor is down are processed after it restarts:
// the durable consumer remembers where it was.
func TestRestartProcessesEventsPublishedWhileDown(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	w := h.start()
	h.commit("a", 10)
	h.eventually("first event applied", func() bool {
		return testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", metrics.OutcomeApplied)) >= 1
	})
	w.Close()

	for range 6 {
		h.commit("a", 10)
	}
	w2 := h.start()
	h.eventually("events published while down are applied", func() bool {
		return testutil.ToFloat64(w2.Metrics.Events.WithLabelValues("commit", metrics.OutcomeApplied)) >= 6
	})
	h.eventually("compaction after restart", func() bool { return w2.Pool.Stats().Succeeded >= 1 })
	if n := len(h.files()["a"]); n > 5 {
		t.Errorf("partition a has %d files after restart and compaction, want <= 5", n)
	}
	if got := h.contents().Total; got != h.writer.Written() {
		t.Errorf("table holds %v, writer wrote %v", got, h.writer.Written())
	}
}
