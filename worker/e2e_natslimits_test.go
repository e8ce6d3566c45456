package worker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/triggers"
)

// 10,000 commit events for 100 table names that do not exist cost at most
// a couple of catalog loads per name within the TTL: the first answer is
// remembered. Every event is still dead-lettered (nothing is lost). (The
// TTL's end, after which the catalog is asked again: TestUnknownTables.)
func TestUnknownTableStormCostsOneLoadPerName(t *testing.T) {
	const names, perName = 100, 100
	h := newHarness(t, testThresholds, nil)
	var counted *countingCatalog
	h.workerCfg = func(c *Config) {
		c.Commits.UnknownTableTTL = time.Hour
		c.DisableNotifications = true
		c.wrapCatalog = func(cat catalog.Catalog) catalog.Catalog { counted = countCalls(cat); return counted }
	}
	w := h.start()
	for i := range perName {
		for n := range names {
			ev := events.CommitEvent{Namespace: "ghost", Table: fmt.Sprint("t", n), SnapshotID: int64(i + 1)}
			data, err := ev.Encode()
			if err != nil {
				t.Fatal(err)
			}
			h.publishRaw("iceberg.commits.ghost."+ev.Table, string(data))
		}
	}
	unknown := func() float64 {
		return testutil.ToFloat64(w.Metrics.Events.WithLabelValues(metrics.SourceCommit, metrics.OutcomeUnknownTable))
	}
	h.eventually("every event dead-lettered", func() bool { return unknown() == names*perName })
	loads := counted.loadsOf()
	total := 0
	for n := range names {
		got := loads[fmt.Sprint("ghost.t", n)]
		total += got
		if got < 1 || got > 2 {
			t.Errorf("ghost.t%d: %d catalog loads for %d events, want 1 or 2", n, got, perName)
		}
	}
	// How many events the memory answered, rather than the load they
	// arrived during (the coalescer hands those the load's answer), depends
	// on timing; that the memory answers is what the load count above
	// proves: without it each name costs about one load per event.
	remembered := testutil.ToFloat64(w.Metrics.UnknownTablesRemembered)
	t.Logf("%d events for %d unknown names: %d catalog loads, %.0f answered from memory", names*perName, names, total, remembered)
	if remembered == 0 {
		t.Errorf("no event answered from memory")
	}
	if dl := h.deadLetters(); len(dl) != names*perName || dl[len(dl)-1].Reason != events.ReasonUnknownTable ||
		!strings.Contains(dl[len(dl)-1].Error, "it is asked again after") {
		t.Errorf("%d dead letters, the last %+v", len(dl), dl[len(dl)-1])
	}
	if err := w.Ready(h.ctx); err != nil {
		t.Errorf("not ready after the storm: %v", err)
	}
}

// A stream reactor created, at its limit: the server refuses what is
// published (the publisher sees why), reactor says so in a log line and
// reactor_stream_full_total, keeps running, and once it drains the
// stream says it is below its limit again.
func TestCommitStreamAtItsLimit(t *testing.T) {
	const limit = 40
	h := newHarness(t, testThresholds, nil)
	var counted *countingCatalog
	h.workerCfg = func(c *Config) {
		c.Commits.Limits = triggers.StreamLimits{MaxMsgs: limit}
		c.StreamWatchEvery = 50 * time.Millisecond
		c.DisableNotifications = true
		c.wrapCatalog = func(cat catalog.Catalog) catalog.Catalog { counted = countCalls(cat); return counted }
	}
	w := h.start()
	h.eventually("ready", func() bool { return w.Ready(h.ctx) == nil })
	// The catalog stops answering loads: reactor holds the events it
	// takes, unacknowledged, and the stream fills up.
	hang := make(chan struct{})
	counted.hang.Store(&hang)
	refused := 0
	var refusal error
	for i := range limit + 25 {
		ev := events.CommitEvent{Namespace: "db", Table: "events", SnapshotID: int64(i + 1)}
		data, _ := ev.Encode()
		if _, err := h.js.Publish(h.ctx, "iceberg.commits.db.events", data); err != nil {
			refused++
			refusal = err
		}
	}
	if refused != 25 || !strings.Contains(refusal.Error(), "maximum messages exceeded") {
		t.Fatalf("%d of %d publishes refused (want 25), the last: %v", refused, limit+25, refusal)
	}
	full := func() float64 {
		return testutil.ToFloat64(w.Metrics.StreamFull.WithLabelValues(triggers.DefaultCommitStream))
	}
	h.eventually("reactor sees the stream full", func() bool {
		return full() == 1 && strings.Contains(h.logs.String(), "stream full: NATS refuses what is published to it")
	})
	if got := testutil.ToFloat64(w.Metrics.StreamMessages.WithLabelValues(triggers.DefaultCommitStream)); got != limit {
		t.Errorf("reactor_stream_messages = %v, want %d", got, limit)
	}
	if got := testutil.ToFloat64(w.Metrics.StreamLimitMessages.WithLabelValues(triggers.DefaultCommitStream)); got != limit {
		t.Errorf("reactor_stream_limit_messages = %v, want %d", got, limit)
	}
	if err := w.Ready(h.ctx); err != nil {
		t.Errorf("not ready with a full stream: %v", err)
	}
	// The catalog answers again: the events are applied, the stream
	// drains, and reactor says so.
	close(hang)
	h.eventually("the stream drained", func() bool {
		return testutil.ToFloat64(w.Metrics.StreamMessages.WithLabelValues(triggers.DefaultCommitStream)) == 0 &&
			strings.Contains(h.logs.String(), "stream below its limit again")
	})
	if full() != 1 {
		t.Errorf("reactor_stream_full_total = %v, want 1", full())
	}
}
