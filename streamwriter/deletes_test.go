package streamwriter

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
)

// Both kinds of merge-on-read delete leave the table holding exactly the
// writer's tally, with the deleted ids gone and the delete files expected.
func TestDeletesKeepTheTally(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := CreateTable(ctx, cat, ident, MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	w := New(cat, ident, nil)
	for _, c := range []string{"a", "a", "b"} {
		if _, err := w.Commit(ctx, c, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.DeleteRows(ctx, 3, 15, 25, 999); err != nil {
		t.Fatal(err)
	}
	if _, err := w.DeleteKeys(ctx, 4, 26, 3); err != nil { // 3 is already gone
		t.Fatal(err)
	}
	if snap, err := w.DeleteRows(ctx, 3); err != nil || snap != 0 {
		t.Fatalf("deleting a deleted row: snapshot %d, %v", snap, err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != w.Written() || got.Total.Rows != 25 {
		t.Fatalf("table holds %v, writer tally %v, want 25 rows", got.Total, w.Written())
	}
	for _, id := range []int64{3, 4, 15, 25, 26} {
		if got.IDs[id] != 0 {
			t.Errorf("deleted id %d is still there", id)
		}
	}
	if n := len(w.LiveIDs()); n != 25 {
		t.Errorf("%d live ids, want 25", n)
	}
	kinds := map[iceberg.ManifestEntryContent]int{}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		for _, d := range append(task.DeleteFiles, task.EqualityDeleteFiles...) {
			if !seen[d.FilePath()] {
				seen[d.FilePath()] = true
				kinds[d.ContentType()]++
			}
		}
	}
	if kinds[iceberg.EntryContentPosDeletes] != 2 || kinds[iceberg.EntryContentEqDeletes] != 2 {
		t.Errorf("delete files by kind %v, want 2 position (a, b) and 2 equality (a, b)", kinds)
	}
}
