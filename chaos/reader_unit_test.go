package chaos

import (
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
)

// The reader the chaos test trusts agrees with the writer on a table
// holding position and equality deletes, and counts what each removed.
func TestReaderAppliesDeletes(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "r"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, streamwriter.MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	for _, c := range []string{"a", "b", "a"} {
		if _, err := w.Commit(ctx, c, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.DeleteRows(ctx, 2, 15); err != nil {
		t.Fatal(err)
	}
	if _, err := w.DeleteKeys(ctx, 3, 21, 22); err != nil {
		t.Fatal(err)
	}
	// A data file newer than every delete file: none applies to it.
	if _, err := w.Commit(ctx, "b", 5); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := readTable(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if want := w.Written(); got != want || want.Rows != 30 {
		t.Fatalf("read %v, the writer wrote %v (want 30 rows)", got, want)
	}
	if st.posDeleted != 2 || st.eqDeleted != 3 || st.pos == 0 || st.eq == 0 {
		t.Fatalf("deletes applied: %+v", st)
	}
	want, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if want.Total != got {
		t.Fatalf("iceberg-go's scan reads %v, this reader %v", want.Total, got)
	}
}
