package triggers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

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

// A backlog of commit events stored before reactor consumes them (a
// restart, an outage) costs one refresh per table, however many pulls the
// table's events are spread over: the events name commits the catalog
// shows (the state has not applied them) or never showed (a writer's event
// for a commit that failed after all). Every event is acknowledged and
// counted applied once. The count is asserted, never a time.
func TestBacklogCostsOneRefreshPerTable(t *testing.T) {
	for _, ids := range []string{"real", "unknown"} {
		t.Run(ids, func(t *testing.T) {
			const tables, perTable = 20, 60
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			dir := t.TempDir()
			cat, err := embedded.OpenCatalog(ctx, dir+"/catalog")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cat.(io.Closer).Close() })
			own, err := embedded.OpenCatalog(ctx, dir+"/catalog")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = own.(io.Closer).Close() })
			watched := newWatchedCatalog(own)
			cfg, err := thresholds.Parse([]byte("defaults: {small_file_count: 1000000}"))
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.DiscardHandler)
			p := planner.New(planner.Options{Catalog: watched, Config: cfg, Dispatch: func(jobs.Job) {}, Logger: log})
			t.Cleanup(p.Close)
			_, _, js := embeddedtest.JetStream(t, dir+"/nats")
			opts := triggers.CommitOptions{MaxAckPending: 400} // pulls of 100: each table's events span every pull
			if err := triggers.EnsureStreams(ctx, js, opts); err != nil {
				t.Fatal(err)
			}
			snapshots := map[string][]int64{}
			for i := range tables {
				ident := table.Identifier{"db", fmt.Sprintf("t%02d", i)}
				if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
					t.Fatal(err)
				}
				w := streamwriter.New(cat, ident, nil)
				first, err := w.Commit(ctx, "a", 2)
				if err != nil {
					t.Fatal(err)
				}
				tbl, err := own.LoadTable(ctx, ident)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Observe(ctx, tbl); err != nil { // the state as a restart found it
					t.Fatal(err)
				}
				name := ident[1]
				snapshots[name] = []int64{first}
				if ids == "real" {
					for range 3 {
						id, err := w.Commit(ctx, "a", 2)
						if err != nil {
							t.Fatal(err)
						}
						snapshots[name] = append(snapshots[name], id)
					}
				}
			}
			for k := range perTable {
				for i := range tables {
					name := fmt.Sprintf("t%02d", i)
					id := int64(1_000_000_000 + i*perTable + k) // a commit the catalog never showed
					if ids == "real" {
						id = snapshots[name][1+k%3]
					}
					data, err := events.CommitEvent{Namespace: "db", Table: name, SnapshotID: id}.Encode()
					if err != nil {
						t.Fatal(err)
					}
					if _, err := js.Publish(ctx, "iceberg.commits.db."+name, data); err != nil {
						t.Fatal(err)
					}
				}
			}
			loadsBefore := map[string]int{}
			for i := range tables {
				loadsBefore[fmt.Sprintf("t%02d", i)] = watched.loadsOf(fmt.Sprintf("db.t%02d", i))
			}
			met := metrics.New()
			cons, err := triggers.StartCommits(ctx, js, opts, p, log, met)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cons.Stop)
			applied := met.Events.WithLabelValues("commit", metrics.OutcomeApplied)
			deadline := time.Now().Add(2 * time.Minute)
			for testutil.ToFloat64(applied) < tables*perTable {
				if time.Now().After(deadline) {
					t.Fatalf("%v of %d events applied after two minutes", testutil.ToFloat64(applied), tables*perTable)
				}
				time.Sleep(10 * time.Millisecond)
			}
			total := 0
			for i := range tables {
				name := fmt.Sprintf("t%02d", i)
				n := watched.loadsOf("db."+name) - loadsBefore[name]
				total += n
				if n > 2 {
					t.Errorf("table %s: %d refreshes for %d events of one backlog, want at most 2", name, n, perTable)
				}
			}
			if got := testutil.ToFloat64(applied); got != tables*perTable {
				t.Errorf("%v events counted applied, want %d (each once)", got, tables*perTable)
			}
			t.Logf("%d events over %d tables: %d catalog loads", tables*perTable, tables, total)
		})
	}
}
