package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
)

// convert-equality-deletes: a dry run counts, the run converts, the rows
// stay, a second run finds nothing, and the counts are printed as columns.
func TestConvertEqualityDeletesCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(interface{ Close() error }).Close()
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, streamwriter.MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	for _, c := range []string{"a", "a", "b"} {
		if _, err := w.Commit(ctx, c, 20); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{3, 27, 45} {
		if _, err := w.DeleteKeys(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	o := &oneShotTable{t: t, ctx: ctx, dir: dir, cat: cat, ident: ident, writer: w}

	// With equality_delete_file_count set, reactor plan picks the
	// conversion for a and says why; b has one file, below the count.
	th := filepath.Join(dir, "thresholds.yaml")
	if err := os.WriteFile(th, []byte("defaults: {equality_delete_file_count: 2, quiet_period: 0s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, _ := o.run(0, "plan", "db.t", "--thresholds", th)
	if !strings.Contains(plan, "convert_equality_deletes") || !strings.Contains(plan, "equality_delete_file_count") ||
		!strings.Contains(plan, "rewrites no data") {
		t.Errorf("reactor plan does not choose the conversion, or says not why:\n%s", plan)
	}

	out, _ := o.run(0, "convert-equality-deletes", "db.t", "--partition", "category=a", "--dry-run", "--json")
	if c := counts(t, out); c["removed_equality_delete_files_count"] != 2 || c["matched_rows_count"] != 2 || c["scanned_data_files_count"] != 2 {
		t.Errorf("dry run counts %v", c)
	}
	out, _ = o.run(0, "convert-equality-deletes", "db.t", "--json")
	if c := counts(t, out); c["removed_equality_delete_files_count"] != 3 || c["added_position_delete_files_count"] != 2 ||
		c["matched_rows_count"] != 3 || c["read_bytes_count"] <= 0 {
		t.Errorf("counts %v", c)
	}
	o.checkRows()
	out, _ = o.run(0, "convert-equality-deletes", "db.t")
	if !strings.Contains(out, "removed_equality_delete_files_count") || !strings.Contains(out, "matched_rows_count") {
		t.Errorf("second run prints\n%s", out)
	}
}
