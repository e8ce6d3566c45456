package planner

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
)

// A rewrite Spark committed for one of reactor's jobs carries no
// reactor.job-id: once the job's result names it (OwnSnapshots), it is
// reactor's own (not a write: it cannot trigger a job; sorted files for a
// sort); without that it is another writer's commit.
func TestOffloadedSnapshotsAreOwn(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mark, sort bool
	}{{"unmarked", false, false}, {"marked", true, false}, {"marked sort", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cat, err := embedded.OpenCatalog(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ident := table.Identifier{"db", "t"}
			if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
				t.Fatal(err)
			}
			w := streamwriter.New(cat, ident, nil)
			for range 3 {
				if _, err := w.Commit(ctx, "a", 5); err != nil {
					t.Fatal(err)
				}
			}
			sz := fileSizes{small: 1 << 20, tiny: 1 << 10}
			var tc0 tableCounters
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tc0.advance(ctx, tbl, sz); err != nil {
				t.Fatal(err)
			}
			before := tc0.partitions["category=a"].LastWrite
			time.Sleep(5 * time.Millisecond) // the rewrite's timestamp differs from the appends'
			tasks, err := tbl.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			txn := tbl.NewTransaction()
			rw := txn.NewRewrite(iceberg.Properties{}) // Spark's summary: no reactor property
			for _, task := range tasks[1:] {
				rw.DeleteFile(task.File)
			}
			if err := rw.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			tbl, err = txn.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.mark {
				tc0.markOffloaded([]int64{tbl.CurrentSnapshot().SnapshotID}, tc.sort)
			}
			st, err := tc0.advance(ctx, tbl, sz)
			if err != nil {
				t.Fatal(err)
			}
			if st.ownSnapshotsOnly != tc.mark {
				t.Errorf("own snapshots only = %v, want %v", st.ownSnapshotsOnly, tc.mark)
			}
			if tc.mark && !tc0.partitions["category=a"].LastWrite.Equal(before) {
				t.Errorf("the offloaded rewrite moved LastWrite")
			}
			if got := tc0.sorted(tbl.CurrentSnapshot()); got != tc.sort {
				t.Errorf("sorted = %v, want %v", got, tc.sort)
			}
		})
	}
}
