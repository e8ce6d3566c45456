package streamwriter

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
)

// An upsert replaces live rows by key and adds new ones in one snapshot:
// the table holds each id once (the equality delete removes the old copy
// and not the new one beside it), the tally is exact, and every upsert
// adds one equality delete file for its partition.
func TestUpsertReplacesRowsByKey(t *testing.T) {
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
	if _, err := w.Commit(ctx, "a", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, "b", 10); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.Upsert(ctx, "a", 6, 4); err != nil { // 4 updated keys, 2 new
			t.Fatal(err)
		}
	}
	if _, err := w.Upsert(ctx, "b", 3, 0); err != nil { // inserts only: no delete file
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != w.Written() || got.Total.Rows != 10+10+3*2+3 {
		t.Fatalf("table holds %v, writer tally %v, want %d rows", got.Total, w.Written(), 10+10+3*2+3)
	}
	for id, n := range got.IDs {
		if n != 1 {
			t.Errorf("id %d is in the table %d times", id, n)
		}
	}
	eq := map[string]bool{}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		for _, d := range task.EqualityDeleteFiles {
			if d.ContentType() != iceberg.EntryContentEqDeletes {
				t.Errorf("%s in the equality deletes is %v", d.FilePath(), d.ContentType())
			}
			eq[d.FilePath()] = true
		}
	}
	if len(eq) != 3 {
		t.Errorf("%d equality delete files apply, want 3 (one per upsert with updates)", len(eq))
	}
	if _, err := AppendOnly(cat, ident, nil).Upsert(ctx, "a", 2, 1); err == nil {
		t.Error("an append-only writer upserted")
	}
	if _, err := w.Upsert(ctx, "a", 2, 3); err == nil {
		t.Error("an upsert of more updates than rows was accepted")
	}
}
