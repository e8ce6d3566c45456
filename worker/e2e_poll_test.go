package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/streamwriter"
)

// With no commit event and no bucket notification at all, the polling
// safety net alone brings a written table to reactor: its small files are
// compacted, rows and checksum exact. Once the table is quiet, a poll that
// finds the catalog's metadata file unchanged loads nothing (the count of
// loads is asserted, not a time).
func TestPollingAloneMaintainsATable(t *testing.T) {
	h := newHarness(t, testThresholds+"  refresh_interval: 2s\n", nil)
	var counted *countingCatalog
	h.workerCfg = func(c *Config) {
		c.DisableNotifications = true
		c.wrapCatalog = func(cat catalog.Catalog) catalog.Catalog { counted = countCalls(cat); return counted }
	}
	silent := streamwriter.New(h.cat, h.ident, nil) // publishes no event
	w := h.start()
	for range 12 {
		if _, err := silent.Commit(h.ctx, "a", 20); err != nil {
			t.Fatal(err)
		}
	}
	h.eventually("the table compacted from polling alone", func() bool { return len(h.files()["a"]) <= 5 })
	if got, want := h.contents().Total, silent.Written(); got != want {
		t.Errorf("table holds %v, the writer wrote %v", got, want)
	}
	changed := testutil.ToFloat64(w.Metrics.Polls.WithLabelValues(PollChanged))
	if changed == 0 {
		t.Error("no poll found a commit, yet the table was maintained")
	}
	if n := testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", "applied")); n != 0 {
		t.Errorf("%v commit events applied; the test publishes none", n)
	}

	// Quiet: a window of three unchanged polls in which no job ran and
	// no poll found a change (maintenance may still be committing at
	// first: such a window is tried again).
	unchanged := func() float64 { return testutil.ToFloat64(w.Metrics.Polls.WithLabelValues(PollUnchanged)) }
	quiet := false
	for try := 0; try < 20 && !quiet; try++ {
		loads, from, calls := counted.loadsOf()["db.events"], unchanged(), w.catalog.CallCounts()
		jobs, changes := w.Pool.Stats().Jobs, testutil.ToFloat64(w.Metrics.Polls.WithLabelValues(PollChanged))
		h.eventually("three more unchanged polls", func() bool { return unchanged() >= from+3 })
		if w.Pool.Stats().Jobs != jobs || testutil.ToFloat64(w.Metrics.Polls.WithLabelValues(PollChanged)) != changes {
			continue
		}
		quiet = true
		if got := counted.loadsOf()["db.events"]; got != loads {
			t.Errorf("%d table loads during %v unchanged polls, want 0", got-loads, unchanged()-from)
		}
		// What the catalog was asked (reactor_catalog_calls_total): a
		// location per poll, no load.
		now := w.catalog.CallCounts()
		if now[catalogs.CallLoad] != calls[catalogs.CallLoad] || now[catalogs.CallLocate] < calls[catalogs.CallLocate]+3 {
			t.Errorf("catalog calls during %v unchanged polls: %d loads, %d locates; want 0 loads, at least 3 locates",
				unchanged()-from, now[catalogs.CallLoad]-calls[catalogs.CallLoad], now[catalogs.CallLocate]-calls[catalogs.CallLocate])
		}
	}
	if !quiet {
		t.Fatal("the table never went quiet for three polls")
	}
	if st, ok := w.poller.state("db.events"); !ok || st.Outcome != PollUnchanged || time.Since(st.At) > time.Minute {
		t.Errorf("poll state %+v, %v", st, ok)
	}
}

// A fleet of idle tables is polled in batches: the tables due in one tick
// have their locations read in one catalog call, so the calls are a
// fraction of the checks, and an unchanged table still costs no load.
func TestPollingAFleetReadsLocationsInBatches(t *testing.T) {
	const tables = 40
	h := newHarness(t, testThresholds+"  refresh_interval: 2s\n", nil)
	for i := range tables - 1 { // the harness made db.events
		if _, err := streamwriter.CreateTable(h.ctx, h.cat, table.Identifier{"db", fmt.Sprintf("idle%02d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	h.workerCfg = func(c *Config) { c.DisableNotifications = true }
	w := h.start()
	h.eventually("every table discovered", func() bool { return len(w.Planner.Tables()) == tables })
	unchanged := func() float64 { return testutil.ToFloat64(w.Metrics.Polls.WithLabelValues(PollUnchanged)) }
	h.eventually("every table polled once", func() bool { return unchanged() >= tables })
	from, calls := unchanged(), w.catalog.CallCounts()
	h.eventually("two more rounds of the fleet", func() bool { return unchanged() >= from+2*tables })
	polls, now := unchanged()-from, w.catalog.CallCounts()
	locates, loads := now[catalogs.CallLocate]-calls[catalogs.CallLocate], now[catalogs.CallLoad]-calls[catalogs.CallLoad]
	t.Logf("%v unchanged polls: %d location calls, %d loads", polls, locates, loads)
	if loads != 0 {
		t.Errorf("%d loads while every table was unchanged", loads)
	}
	if float64(locates)*2 > polls {
		t.Errorf("%d location calls for %v polls: the tables due together were not read together", locates, polls)
	}
}
