package planner

import (
	"slices"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// Every commit event the planner applies is passed on to CommitObserved
// before the table is loaded, once per snapshot: a duplicate event for a
// snapshot already applied is not a new commit.
func TestCommitObservedHearsEachNewCommitOnce(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := thresholds.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		heard []string
	)
	p := New(Options{Catalog: cat, Config: cfg, Dispatch: func(jobs.Job) {}, CommitObserved: func(name string) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, name)
	}})
	t.Cleanup(p.Close)
	w := streamwriter.New(cat, ident, nil)
	for range 2 {
		snap, err := w.Commit(ctx, "a", 3)
		if err != nil {
			t.Fatal(err)
		}
		ev := events.CommitEvent{Namespace: "db", Table: "t", SnapshotID: snap}
		for range 2 { // the second is a duplicate delivery
			if err := p.Apply(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(heard, []string{"db.t", "db.t"}) {
		t.Errorf("CommitObserved heard %v, want db.t twice (two commits, each delivered twice)", heard)
	}
}
