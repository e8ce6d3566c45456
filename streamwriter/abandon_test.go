package streamwriter

import (
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
)

// An abandoned write leaves its data file, manifest and manifest list on
// disk, changes neither the table nor the tally, and burns its ids.
func TestAbandonLeavesFilesAndNoRows(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	w := New(cat, ident, nil)
	if _, err := w.Commit(ctx, "a", 10); err != nil {
		t.Fatal(err)
	}
	before, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	left, err := w.Abandon(ctx, "a", 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(left.DataFiles) != 1 || len(left.Metadata) != 2 {
		t.Fatalf("abandoned %+v, want one data file, a manifest and a manifest list", left)
	}
	for _, f := range append(left.DataFiles, left.Metadata...) {
		if _, err := os.Stat(strings.TrimPrefix(f, "file://")); err != nil {
			t.Errorf("abandoned file %s: %v", f, err)
		}
	}
	if !strings.Contains(left.DataFiles[0], "/data/category=a/") {
		t.Errorf("data file %s is not under the partition's directory", left.DataFiles[0])
	}
	if _, err := w.Commit(ctx, "a", 5); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != len(before.Metadata().Snapshots())+1 {
		t.Errorf("%d snapshots, want the abandoned write to have added none", n)
	}
	got, err := Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != w.Written() || got.Total.Rows != 15 {
		t.Errorf("table holds %v, tally %v, want 15 rows", got.Total, w.Written())
	}
	for id := int64(11); id <= 17; id++ {
		if got.IDs[id] != 0 {
			t.Errorf("abandoned id %d is in the table", id)
		}
	}
	if got.IDs[18] != 1 {
		t.Errorf("the next commit's first id is 18; found %d times", got.IDs[18])
	}
}
