package triggers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go/jetstream"

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

// watchedCatalog counts the planner's catalog loads per table and can hold
// a table's loads at a gate: before the load (the load then reads what the
// catalog holds once released) or after it (it returns what the catalog
// held when it was called).
type watchedCatalog struct {
	catalog.Catalog

	mu    sync.Mutex
	loads map[string]int
	gates map[string]*gate
}

type gate struct {
	afterLoad bool
	entered   chan struct{} // closed when a load reaches the gate
	left      chan struct{} // closed when a load leaves it (released, or its context ended)
	release   chan struct{}
	once      sync.Once
	leftOnce  sync.Once
}

func newWatchedCatalog(inner catalog.Catalog) *watchedCatalog {
	return &watchedCatalog{Catalog: inner, loads: map[string]int{}, gates: map[string]*gate{}}
}

func (c *watchedCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	name := strings.Join(ident, ".")
	c.mu.Lock()
	c.loads[name]++
	g := c.gates[name]
	c.mu.Unlock()
	wait := func() error {
		if g == nil {
			return nil
		}
		g.once.Do(func() { close(g.entered) })
		defer g.leftOnce.Do(func() { close(g.left) })
		select {
		case <-g.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if g != nil && !g.afterLoad {
		if err := wait(); err != nil {
			return nil, err
		}
	}
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if g != nil && g.afterLoad {
		if werr := wait(); werr != nil {
			return nil, werr
		}
	}
	return tbl, err
}

func (c *watchedCatalog) hold(name string, afterLoad bool) *gate {
	g := &gate{afterLoad: afterLoad, entered: make(chan struct{}), left: make(chan struct{}), release: make(chan struct{})}
	c.mu.Lock()
	c.gates[name] = g
	c.mu.Unlock()
	return g
}

func (c *watchedCatalog) open(name string) {
	c.mu.Lock()
	g := c.gates[name]
	delete(c.gates, name)
	c.mu.Unlock()
	if g != nil {
		close(g.release)
	}
}

func (c *watchedCatalog) loadsOf(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads[name]
}

// eventRig is the event path as worker.Start wires it, minus the executor:
// embedded NATS with JetStream, the SQLite catalog (the planner's handle
// watched), the planner, and the commit consumer with its coalescer.
type eventRig struct {
	t       *testing.T
	ctx     context.Context
	cat     catalog.Catalog // the writers' handle
	watched *watchedCatalog
	planner *planner.Planner
	js      jetstream.JetStream
	writers map[string]*streamwriter.Writer
}

func newEventRig(t *testing.T, tables ...string) *eventRig {
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
	for _, name := range tables {
		ident := table.Identifier{"db", name}
		if _, err := streamwriter.CreateTable(ctx, r.cat, ident, nil); err != nil {
			t.Fatal(err)
		}
		r.writers[name] = streamwriter.New(r.cat, ident, nil)
	}
	cfg, err := thresholds.Parse([]byte("defaults: {small_file_count: 1000000}"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	r.planner = planner.New(planner.Options{Catalog: r.watched, Config: cfg, Dispatch: func(jobs.Job) {}, Logger: log})
	t.Cleanup(r.planner.Close)
	_, _, r.js = embeddedtest.JetStream(t, dir+"/nats")
	cons, err := triggers.StartCommits(ctx, r.js, triggers.CommitOptions{}, r.planner, log, metrics.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Stop) // first: stop consuming before the rest goes
	return r
}

// commit appends one small file to the table (no event) and returns the
// snapshot id.
func (r *eventRig) commit(name string) int64 {
	r.t.Helper()
	id, err := r.writers[name].Commit(r.ctx, "a", 2)
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

func (r *eventRig) publish(name string, snapshot int64) {
	r.t.Helper()
	data, err := events.CommitEvent{Namespace: "db", Table: name, SnapshotID: snapshot}.Encode()
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.js.Publish(r.ctx, "iceberg.commits.db."+name, data); err != nil {
		r.t.Fatal(err)
	}
}

func (r *eventRig) applied(name string) int64 {
	id, _ := r.planner.TableCounters("db." + name)
	return id
}

// unacknowledged is the number of commit events delivered or waiting and
// not acknowledged yet (work-queue stream: an acknowledged event is gone).
func (r *eventRig) unacknowledged() uint64 {
	r.t.Helper()
	s, err := r.js.Stream(r.ctx, triggers.DefaultCommitStream)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := s.Info(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return info.State.Msgs
}

// waitTimeout bounds every wait of these tests: a regression fails within
// it instead of hanging until the test binary's deadline.
const waitTimeout = time.Minute

// waitClosed waits for ch to be closed, at most waitTimeout.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
	}
}

func (r *eventRig) eventually(what string, cond func() bool) {
	r.t.Helper()
	for deadline := time.Now().Add(waitTimeout); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (r *eventRig) pending(name string) int {
	r.t.Helper()
	cons, err := r.js.Consumer(r.ctx, triggers.DefaultCommitStream, triggers.DefaultDurable)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := cons.Info(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return info.NumAckPending
}

// A burst of commit events for one table costs one refresh: the first
// event's load finds every commit of the burst, and the others are then
// covered without a catalog round trip. Events that arrive while a refresh
// runs (here: held after its load, so it returns metadata older than
// them) collapse into exactly one more, and none of them is acknowledged
// before it.
func TestBurstOfEventsForOneTableRefreshesOnce(t *testing.T) {
	r := newEventRig(t, "t")
	first := r.commit("t")
	r.publish("t", first)
	r.eventually("the first event applied", func() bool { return r.applied("t") == first && r.unacknowledged() == 0 })
	before := r.watched.loadsOf("db.t")

	const burst = 50
	ids := make([]int64, burst)
	for i := range ids {
		ids[i] = r.commit("t")
	}
	for _, id := range ids {
		r.publish("t", id)
	}
	r.eventually("the burst applied", func() bool { return r.applied("t") == ids[burst-1] && r.unacknowledged() == 0 })
	if got := r.watched.loadsOf("db.t") - before; got != 1 {
		t.Errorf("a burst of %d events caused %d catalog loads, want 1", burst, got)
	}

	// Events arriving during a refresh.
	before = r.watched.loadsOf("db.t")
	g := r.watched.hold("db.t", true)
	lead := r.commit("t")
	r.publish("t", lead)
	waitClosed(t, g.entered, "the lead event's refresh to load and be held")
	const during = 20
	later := make([]int64, during)
	for i := range later {
		later[i] = r.commit("t")
		r.publish("t", later[i])
	}
	r.eventually("every event delivered", func() bool { return r.pending("t") == during+1 })
	if n := r.unacknowledged(); n != during+1 {
		t.Errorf("%d events unacknowledged while the refresh that covers them has not run, want %d", n, during+1)
	}
	r.watched.open("db.t")
	r.eventually("the later events applied", func() bool { return r.applied("t") == later[during-1] && r.unacknowledged() == 0 })
	if got := r.watched.loadsOf("db.t") - before; got != 2 {
		t.Errorf("%d events arriving during a refresh caused %d catalog loads in all, want 2 (the running one and one more)", during, got)
	}
}

// A table whose catalog load hangs does not hold up another table's
// events: b's event is applied while a's load is still held.
func TestSlowCatalogLoadDoesNotDelayAnotherTable(t *testing.T) {
	r := newEventRig(t, "a", "b")
	g := r.watched.hold("db.a", false)
	idA := r.commit("a")
	r.publish("a", idA)
	waitClosed(t, g.entered, "a's load to reach the gate")
	for i := range 3 {
		idB := r.commit("b")
		r.publish("b", idB)
		r.eventually(fmt.Sprintf("b's event %d applied", i), func() bool { return r.applied("b") == idB })
	}
	select {
	case <-g.left:
		t.Fatal("a's load left the gate (released, or its context ended) before b's events were applied")
	default:
	}
	if r.applied("a") != 0 {
		t.Error("a applied while its load is held")
	}
	r.watched.open("db.a")
	r.eventually("a's event applied once its load returns", func() bool { return r.applied("a") == idA && r.unacknowledged() == 0 })
}
