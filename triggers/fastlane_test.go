package triggers_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// heldDelivery is the planner as the commit consumer sees it, except that
// the durable consumer's delivery of a held table's events stops at
// CheckCommit until released: a backlog the hot table's event is queued
// behind, however fast the machine.
type heldDelivery struct {
	*planner.Planner // NearThreshold too: the fast lane is on

	table       string
	entered     chan struct{}
	release     chan struct{}
	once, freed sync.Once
}

func (h *heldDelivery) CheckCommit(ev events.CommitEvent) error {
	if ev.Table == h.table {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	return h.Planner.CheckCommit(ev)
}

// open lets the held delivery go on.
func (h *heldDelivery) open() { h.freed.Do(func() { close(h.release) }) }

// newHotRig is newEventRig with small_file_count 4 (a partition with 2
// small files is near it) and the delivery of other's events held.
func newHotRig(t *testing.T, opts triggers.CommitOptions) (*eventRig, *heldDelivery, *metrics.Metrics, *triggers.CommitConsumer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	r := &eventRig{t: t, ctx: ctx, writers: map[string]*streamwriter.Writer{}}
	var err error
	if r.cat, err = embedded.OpenCatalog(ctx, dir+"/catalog"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cat.(io.Closer).Close() })
	own, err := embedded.OpenCatalog(ctx, dir+"/catalog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.(io.Closer).Close() })
	r.watched = newWatchedCatalog(own)
	for _, name := range []string{"hot", "other"} {
		ident := table.Identifier{"db", name}
		if _, err := streamwriter.CreateTable(ctx, r.cat, ident, nil); err != nil {
			t.Fatal(err)
		}
		r.writers[name] = streamwriter.New(r.cat, ident, nil)
	}
	cfg, err := thresholds.Parse([]byte("defaults: {small_file_count: 4, min_input_files: 4, quiet_period: 0s, cooldown: 0s}"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	r.planner = planner.New(planner.Options{Catalog: r.watched, Config: cfg, Dispatch: func(jobs.Job) {}, Logger: log})
	t.Cleanup(r.planner.Close)
	held := &heldDelivery{Planner: r.planner, table: "other", entered: make(chan struct{}), release: make(chan struct{})}
	_, _, r.js = embeddedtest.JetStream(t, dir+"/nats")
	met := metrics.New()
	cons, err := triggers.StartCommits(ctx, r.js, opts, held, log, met)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Stop) // first: stop consuming (and release) before the rest goes
	t.Cleanup(held.open)
	return r, held, met, cons
}

// A hot table's commit event is applied while the events queued ahead of
// it in the commit stream are still undelivered (the durable consumer is
// held at the first of them): the fast lane refreshes the table as soon
// as the event is published. It acknowledges nothing: the hot events stay
// in the stream until the durable consumer reaches them, finds them
// covered and counts each once; the table is loaded once for them, and
// every event is counted applied exactly once.
func TestHotTableEventOvertakesQueuedEvents(t *testing.T) {
	r, held, met, _ := newHotRig(t, triggers.CommitOptions{})
	// Two small files: half way to small_file_count 4, so the table is hot.
	var primed int64
	for range 2 {
		primed = r.commit("hot")
		r.publish("hot", primed)
	}
	// Acknowledged after the round that opened the lane, which the
	// server confirmed first.
	r.eventually("the priming events applied", func() bool { return r.applied("hot") == primed && r.unacknowledged() == 0 })

	const queued = 50
	other := r.commit("other")
	for range queued {
		r.publish("other", other)
	}
	waitClosed(t, held.entered, "the durable consumer to reach the queued events")
	loads := r.watched.loadsOf("db.hot")

	const hotEvents = 3
	var last int64
	for range hotEvents {
		last = r.commit("hot")
		r.publish("hot", last)
	}
	r.eventually("the hot table's newest commit applied while the queue ahead is held", func() bool { return r.applied("hot") == last })
	if n := r.unacknowledged(); n != queued+hotEvents {
		t.Errorf("%d events unacknowledged while the durable consumer is held, want %d (the fast lane acknowledges nothing)", n, queued+hotEvents)
	}

	held.open()
	r.eventually("every event acknowledged", func() bool { return r.unacknowledged() == 0 })
	applied := met.Events.WithLabelValues("commit", metrics.OutcomeApplied)
	r.eventually("every event counted", func() bool { return testutil.ToFloat64(applied) == 2+queued+hotEvents })
	if got := testutil.ToFloat64(applied); got != 2+queued+hotEvents {
		t.Errorf("%v events counted applied, want %d (each exactly once)", got, 2+queued+hotEvents)
	}
	if got := r.watched.loadsOf("db.hot") - loads; got < 1 || got > hotEvents {
		t.Errorf("%d catalog loads of the hot table for %d events, want 1..%d", got, hotEvents, hotEvents)
	}
	if r.applied("hot") != last {
		t.Errorf("hot table at snapshot %d, want %d", r.applied("hot"), last)
	}
	if got := testutil.ToFloat64(met.FastLaneLooks.WithLabelValues("urgent")); got < 1 || got > hotEvents {
		t.Errorf("reactor_fast_lane_looks_total{outcome=urgent} = %v, want 1..%d", got, hotEvents)
	}
	if got := testutil.ToFloat64(met.FastLanes); got != 1 {
		t.Errorf("reactor_fast_lanes = %v, want 1 (the hot table's lane)", got)
	}
}

// Which tables get a lane: a table near a threshold does, one far from it
// does not, and none does with the fast lane off; the events of a table
// without a lane wait for the durable consumer.
func TestFastLaneOnlyForHotTables(t *testing.T) {
	tests := []struct {
		name      string
		opts      triggers.CommitOptions
		files     int // small files committed before the measured event
		wantLanes int
	}{
		{"near the threshold", triggers.CommitOptions{}, 2, 1},
		{"far from it", triggers.CommitOptions{}, 1, 0},
		{"fast lane off", triggers.CommitOptions{FastLanes: -1}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, held, met, cons := newHotRig(t, tt.opts)
			var id int64
			for range tt.files {
				id = r.commit("hot")
				r.publish("hot", id)
			}
			r.eventually("the events applied", func() bool { return r.applied("hot") == id && r.unacknowledged() == 0 })
			if got := cons.FastLanes(); got != tt.wantLanes {
				t.Errorf("%d lanes, want %d", got, tt.wantLanes)
			}
			if got := testutil.ToFloat64(met.FastLanes); got != float64(tt.wantLanes) {
				t.Errorf("reactor_fast_lanes = %v, want %d", got, tt.wantLanes)
			}
			other := r.commit("other")
			r.publish("other", other)
			waitClosed(t, held.entered, "the durable consumer to reach the held event")
			next := r.commit("hot")
			r.publish("hot", next)
			if tt.wantLanes > 0 {
				r.eventually("the hot event applied through its lane", func() bool { return r.applied("hot") == next })
			}
			held.open()
			r.eventually("every event applied", func() bool { return r.applied("hot") == next && r.unacknowledged() == 0 })
			applied := met.Events.WithLabelValues("commit", metrics.OutcomeApplied)
			r.eventually("every event counted", func() bool { return testutil.ToFloat64(applied) == float64(tt.files+2) })
		})
	}
}

// A table brought in by discovery (at start, or at a lease handover), not
// by an event, gets its lane from FollowHot: after a restart its first
// commit overtakes the backlog instead of waiting behind it, and a
// discovered table far from every threshold gets none.
func TestDiscoveredHotTableGetsALaneBeforeItsFirstEvent(t *testing.T) {
	r, held, met, cons := newHotRig(t, triggers.CommitOptions{})
	for range 2 {
		r.commit("hot") // committed while reactor was down: no event
	}
	r.commit("other")
	if n, err := r.planner.Discover(r.ctx); err != nil || n != 2 {
		t.Fatalf("discovered %d tables (%v), want 2", n, err)
	}
	if got := cons.FastLanes(); got != 0 {
		t.Fatalf("%d lanes before FollowHot, want 0", got)
	}
	cons.FollowHot(r.planner.Tables())
	if got := cons.FastLanes(); got != 1 {
		t.Fatalf("%d lanes after FollowHot, want 1 (hot only: other has one small file of 4)", got)
	}
	cons.FollowHot(r.planner.Tables()) // again: nothing more
	if got := testutil.ToFloat64(met.FastLanes); got != 1 {
		t.Errorf("reactor_fast_lanes = %v, want 1", got)
	}

	other := r.commit("other")
	r.publish("other", other)
	waitClosed(t, held.entered, "the durable consumer to reach the queued event")
	next := r.commit("hot")
	r.publish("hot", next)
	r.eventually("the hot table's first event after discovery applied through its lane", func() bool { return r.applied("hot") == next })
	if n := r.unacknowledged(); n != 2 {
		t.Errorf("%d events unacknowledged while the durable consumer is held, want 2", n)
	}
	held.open()
	r.eventually("every event acknowledged", func() bool { return r.unacknowledged() == 0 })
	applied := met.Events.WithLabelValues("commit", metrics.OutcomeApplied)
	r.eventually("both events counted once", func() bool { return testutil.ToFloat64(applied) == 2 })
}
