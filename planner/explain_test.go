package planner

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// Which job fixes a partition, and why: small files compact; delete debt
// picks the cheaper remedy that works.
func TestPartitionDue(t *testing.T) {
	set := thresholds.Default().For("db.t", nil) // small 384MiB, 10 small files; delete ratio 0.5, rows 0.3, min 5, target 64MiB
	const mb = int64(1 << 20)
	tests := []struct {
		name         string
		c            Counters
		due          bool
		kind         jobkind.Kind
		threshold    string
		applyDeletes bool
		note         string
	}{
		{name: "healthy", c: Counters{DataFiles: 20, Rows: 1000, Bytes: 20 * 512 * mb}},
		{name: "small files", c: Counters{DataFiles: 12, SmallFiles: 12, Rows: 100}, due: true, kind: jobkind.Compact, threshold: "small_file_count"},
		{name: "small files and delete debt: deletes applied",
			c:   Counters{DataFiles: 12, SmallFiles: 12, Rows: 1000, PositionDeleteFiles: 6, PositionDeleteRows: 6},
			due: true, kind: jobkind.Compact, threshold: "small_file_count", applyDeletes: true},
		{name: "many small position deletes, few rows deleted: merge them",
			c:   Counters{DataFiles: 10, Rows: 100000, Bytes: 10 * 512 * mb, PositionDeleteFiles: 8, PositionDeleteRows: 80, DeleteBytes: 8 * 4096},
			due: true, kind: jobkind.RewritePositionDeletes, threshold: "delete_file_ratio", note: "cheaper than rewriting"},
		{name: "equality deletes: only compaction removes them",
			c:   Counters{DataFiles: 10, Rows: 100000, PositionDeleteFiles: 3, EqualityDeleteFiles: 3, EqualityDeleteRows: 30},
			due: true, kind: jobkind.Compact, threshold: "delete_file_ratio", applyDeletes: true, note: "equality delete"},
		{name: "a third of the rows deleted: compaction drops them",
			c:   Counters{DataFiles: 4, Rows: 1000, PositionDeleteFiles: 1, PositionDeleteRows: 400},
			due: true, kind: jobkind.Compact, threshold: "deleted_row_ratio", applyDeletes: true, note: "40% of rows deleted"},
		{name: "deletion vectors cannot be merged",
			c:   Counters{DataFiles: 6, Rows: 100000, DeletionVectors: 6, DeletionVectorRows: 60},
			due: true, kind: jobkind.Compact, threshold: "delete_file_ratio", applyDeletes: true, note: "deletion vectors"},
		{name: "large delete files: merging would not help",
			c:   Counters{DataFiles: 10, Rows: 100000, PositionDeleteFiles: 6, PositionDeleteRows: 600, DeleteBytes: 6 * 40 * mb},
			due: true, kind: jobkind.Compact, threshold: "delete_file_ratio", applyDeletes: true, note: "already average"},
		{name: "below delete_min_input_files", c: Counters{DataFiles: 1, Rows: 1000, PositionDeleteFiles: 4, PositionDeleteRows: 4}},
		{name: "ratio below limit", c: Counters{DataFiles: 20, Rows: 1000, PositionDeleteFiles: 6, PositionDeleteRows: 6}},
		{name: "only dangling deletes left",
			c:   Counters{PositionDeleteFiles: 5, PositionDeleteRows: 5, DeleteBytes: 5000},
			due: true, kind: jobkind.RewritePositionDeletes, threshold: "delete_file_ratio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks, kind, reason, applyDeletes, due := dueOf(partitionDue(tt.c, set, time.Now()))
			if len(checks) != 3 {
				t.Errorf("%d checks, want small files, delete files and deleted rows", len(checks))
			}
			if due != tt.due || kind != tt.kind || string(reason.Threshold) != tt.threshold || applyDeletes != tt.applyDeletes ||
				!strings.Contains(reason.Note, tt.note) {
				t.Errorf("due=%v kind=%q reason=%+v applyDeletes=%v; want due=%v kind=%q threshold=%q applyDeletes=%v note~%q",
					due, kind, reason, applyDeletes, tt.due, tt.kind, tt.threshold, tt.applyDeletes, tt.note)
			}
		})
	}
}

// --partition selects exactly the partitions asked for, wherever they fall
// in key order (a bug found by the Spark interop harness took every
// partition after the last one asked for).
func TestManualJobPartitions(t *testing.T) {
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
	for _, c := range []string{"a", "b", "c", "d"} {
		if _, err := w.Commit(ctx, c, 3); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ask, want []string
	}{
		{[]string{"category=a"}, []string{"category=a"}},
		{[]string{"category=b", "category=d"}, []string{"category=b", "category=d"}},
		{nil, []string{"category=a", "category=b", "category=c", "category=d"}},
	} {
		job, err := ManualJob(ctx, tbl, thresholds.Default(), jobkind.Compact, ManualOptions{Partitions: tt.ask}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := job.PartitionKeys(); !slices.Equal(got, tt.want) {
			t.Errorf("--partition %v selected %v, want %v", tt.ask, got, tt.want)
		}
	}
	if _, err := ManualJob(ctx, tbl, thresholds.Default(), jobkind.Compact, ManualOptions{Partitions: []string{"category=z"}}, time.Now()); !errors.Is(err, ErrUnknownPartition) {
		t.Errorf("unknown partition: %v", err)
	}
}

// dueOf spreads a partition verdict for a table of cases.
func dueOf(v partitionVerdict) ([]Check, jobkind.Kind, jobs.Reason, bool, bool) {
	return v.checks, v.kind, v.reason, v.applyDeletes, v.due
}
