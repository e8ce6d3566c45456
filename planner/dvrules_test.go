package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// On format v3 the position-delete rewrite is due whenever a partition
// breaks the spec's deletion-vector rules as far as the counters can tell:
// a Parquet position-delete file (an upgrade's leftover), or more deletion
// vectors than data files. One vector per data file is healthy, and v2
// tables are judged as before.
func TestDeletionVectorRules(t *testing.T) {
	set := thresholds.Default().For("db.t", nil)
	tests := []struct {
		name     string
		c        Counters
		due      bool
		kind     jobkind.Kind
		measured int64
	}{
		{name: "v3, one vector per data file", c: Counters{v3: true, DataFiles: 10, Rows: 100000, DeletionVectors: 3, DeletionVectorRows: 30}},
		{name: "v3, a Parquet position delete left from v2",
			c:   Counters{v3: true, DataFiles: 10, Rows: 100000, PositionDeleteFiles: 1, PositionDeleteRows: 2, DeleteBytes: 2000},
			due: true, kind: jobkind.RewritePositionDeletes, measured: 1},
		{name: "v3, more vectors than data files (duplicate or dangling)",
			c:   Counters{v3: true, DataFiles: 2, Rows: 100000, DeletionVectors: 3, DeletionVectorRows: 30},
			due: true, kind: jobkind.RewritePositionDeletes, measured: 1},
		{name: "v3, vectors of a partition whose data files are all gone",
			c:   Counters{v3: true, DeletionVectors: 2, DeletionVectorRows: 2},
			due: true, kind: jobkind.RewritePositionDeletes, measured: 2},
		{name: "v2, one Parquet position delete: below delete_min_input_files",
			c: Counters{DataFiles: 10, Rows: 100000, PositionDeleteFiles: 1, PositionDeleteRows: 2, DeleteBytes: 2000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks, kind, reason, apply, due := dueOf(partitionDue(tt.c, set, time.Now()))
			if due != tt.due || kind != tt.kind || apply {
				t.Fatalf("due=%v kind=%q apply=%v reason=%+v; want due=%v kind=%q", due, kind, apply, reason, tt.due, tt.kind)
			}
			var found bool
			for _, c := range checks {
				if c.Threshold == "deletion_vector_rules" {
					found = true
					if c.Measured != tt.measured || c.Over != (tt.measured > 0) || !strings.Contains(c.Note, "format v3") {
						t.Errorf("check %+v, want measured %d", c, tt.measured)
					}
				}
			}
			if found != tt.c.v3 {
				t.Errorf("deletion_vector_rules check shown: %v, want it on v3 only", found)
			}
			if due && reason.Threshold != "deletion_vector_rules" {
				t.Errorf("reason %+v, want deletion_vector_rules", reason)
			}
			if !due {
				return
			}
			// The rewrite finding nothing hands the partition to a
			// compaction applying the deletes, then leaves it alone.
			_, kind, _, apply, due = dueOf(partitionDue(tt.c, set, time.Now(), jobkind.RewritePositionDeletes))
			if !due || kind != jobkind.Compact || !apply {
				t.Errorf("after the rewrite settled: %q apply=%v due=%v, want a compaction applying deletes", kind, apply, due)
			}
			if _, kind, _, _, due := dueOf(partitionDue(tt.c, set, time.Now(), jobkind.RewritePositionDeletes, jobkind.Compact)); due {
				t.Errorf("both settled: still due for %q", kind)
			}
		})
	}
}

// Explain on a real table: a v2 table with Parquet position deletes plans
// nothing for one delete file; upgraded to v3, the same partition is due
// for rewrite_position_deletes by deletion_vector_rules, and the check is
// shown for v3 tables only.
func TestExplainDeletionVectorRulesAfterUpgrade(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, streamwriter.MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	if _, err := w.Commit(ctx, "a", 50); err != nil {
		t.Fatal(err)
	}
	if _, err := w.DeleteRows(ctx, 3); err != nil {
		t.Fatal(err)
	}
	cfg, err := thresholds.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	explain := func() Plan {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Explain(ctx, tbl, cfg, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	shown := func(p Plan) bool {
		for _, pp := range p.Partitions {
			for _, c := range pp.Checks {
				if c.Threshold == "deletion_vector_rules" {
					return true
				}
			}
		}
		return false
	}
	if p := explain(); len(p.Jobs) != 0 || shown(p) {
		t.Fatalf("v2: jobs %+v, deletion_vector_rules shown %v; want neither", p.Jobs, shown(p))
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.UpgradeFormatVersion(3); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	p := explain()
	if !shown(p) || len(p.Jobs) != 1 || p.Jobs[0].Kind != jobkind.RewritePositionDeletes ||
		p.Jobs[0].Reasons[0].Threshold != "deletion_vector_rules" {
		t.Fatalf("v3: jobs %+v (check shown %v); want rewrite_position_deletes for deletion_vector_rules", p.Jobs, shown(p))
	}
}
