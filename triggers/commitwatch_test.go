package triggers_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/commitwatch"
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

// The commit consumer tells the commit watch (which the executor's retries
// wait on) of every new commit, once, before its table is loaded; an event
// of a commit already applied (a duplicate delivery) is not a new commit,
// and another table's commit wakes nobody waiting on this one.
func TestCommitConsumerObservesEachNewCommitOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, dir+"/catalog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.(io.Closer).Close() })
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := thresholds.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	p := planner.New(planner.Options{Catalog: cat, Config: cfg, Dispatch: func(jobs.Job) {}, Logger: log})
	t.Cleanup(p.Close)
	_, _, js := embeddedtest.JetStream(t, dir+"/nats")
	watch := &commitwatch.Watch{}
	opts := triggers.CommitOptions{CommitWatch: watch}
	if err := triggers.EnsureStreams(ctx, js, opts); err != nil {
		t.Fatal(err)
	}
	met := metrics.New()
	cons, err := triggers.StartCommits(ctx, js, opts, p, log, met)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Stop)
	applied := met.Events.WithLabelValues("commit", metrics.OutcomeApplied)
	// Each event is published once the one before it was applied, so a
	// duplicate finds its commit applied (no timing decides the count).
	publish := func(ev events.CommitEvent, want float64) {
		t.Helper()
		data, err := ev.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, "iceberg.commits."+ev.Namespace+"."+ev.Table, data); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for testutil.ToFloat64(applied) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%v events applied after a minute, want %v", testutil.ToFloat64(applied), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	w := streamwriter.New(cat, ident, nil)
	var applies float64
	for range 2 {
		snap, err := w.Commit(ctx, "a", 3)
		if err != nil {
			t.Fatal(err)
		}
		ev := events.CommitEvent{Namespace: "db", Table: "t", SnapshotID: snap}
		for range 2 { // the second is a duplicate delivery
			applies++
			publish(ev, applies)
		}
	}
	if got := watch.Mark("db.t"); got != 2 {
		t.Errorf("the watch observed %d commits of db.t, want 2 (two commits, each delivered twice)", got)
	}
	if got := watch.Mark("db.other"); got != 0 {
		t.Errorf("the watch observed %d commits of db.other, want none", got)
	}
}
