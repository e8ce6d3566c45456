package planner

import (
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/streamwriter"
)

// A sort Spark committed for reactor, recorded in the table's storage,
// is reactor's own sorted output for a planner that starts afresh (a
// restart, a new owner) before it builds the table's state, so the files
// that snapshot added count as sorted and no sort is due again. A garbled
// record is skipped.
func TestRecordedOffloadedSnapshotsSurviveARestart(t *testing.T) {
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
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
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
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur := tbl.CurrentSnapshot()
	keys := deletions.EphemeralKeyring()
	recs := keys.Records(fs, deletions.RefOf(tbl))
	rec := deletions.OwnSnapshots{Table: "db.t", JobID: "spark-sort-1", Kind: jobkind.Sort.String(), Sort: true, SnapshotIDs: []int64{cur.SnapshotID}}
	if _, err := recs.WriteOwnSnapshots(rec); err != nil {
		t.Fatal(err)
	}
	if err := fs.(iceio.WriteFileIO).WriteFile(deletions.Dir(tbl.Location())+"/spark-garbled.json", []byte(`{"snapshot_ids": [`)); err != nil {
		t.Fatal(err)
	}
	// A writer's forgery: its own commit passed off as reactor's, which
	// would hide it from compaction.
	forged := rec
	forged.JobID, forged.SnapshotIDs = "forged", []int64{tbl.Metadata().Snapshots()[0].SnapshotID}
	if _, err := deletions.EphemeralKeyring().Records(fs, deletions.RefOf(tbl)).WriteOwnSnapshots(forged); err != nil {
		t.Fatal(err)
	}
	p := New(Options{Catalog: cat, Records: keys})
	var fresh tableCounters
	n, err := p.markRecordedOffloaded(recs, "db.t", &fresh)
	if err != nil || n != 1 {
		t.Fatalf("marked %d, %v; want the one recorded snapshot", n, err)
	}
	if got := testutil.ToFloat64(p.met.RecordsRefused.WithLabelValues("db.t", deletions.RefusedUnknownKey)); got != 1 {
		t.Errorf("forged records refused: %v, want 1", got)
	}
	if _, err := fresh.advance(ctx, tbl, fileSizes{small: 1 << 20, tiny: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	if !fresh.own(cur) || !fresh.sorted(cur) {
		t.Errorf("own %v, sorted %v; want both", fresh.own(cur), fresh.sorted(cur))
	}
	var unrecorded tableCounters
	if _, err := unrecorded.advance(ctx, tbl, fileSizes{small: 1 << 20, tiny: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	if unrecorded.own(cur) || unrecorded.sorted(cur) {
		t.Errorf("without the record: own %v, sorted %v; want neither (another writer's)", unrecorded.own(cur), unrecorded.sorted(cur))
	}
}
