package planner

import (
	"strings"
	"testing"
	"time"

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
		kind     JobKind
		measured int64
	}{
		{name: "v3, one vector per data file", c: Counters{v3: true, DataFiles: 10, Rows: 100000, DeletionVectors: 3, DeletionVectorRows: 30}},
		{name: "v3, a Parquet position delete left from v2",
			c:   Counters{v3: true, DataFiles: 10, Rows: 100000, PositionDeleteFiles: 1, PositionDeleteRows: 2, DeleteBytes: 2000},
			due: true, kind: KindRewritePositionDeletes, measured: 1},
		{name: "v3, more vectors than data files (duplicate or dangling)",
			c:   Counters{v3: true, DataFiles: 2, Rows: 100000, DeletionVectors: 3, DeletionVectorRows: 30},
			due: true, kind: KindRewritePositionDeletes, measured: 1},
		{name: "v3, vectors of a partition whose data files are all gone",
			c:   Counters{v3: true, DeletionVectors: 2, DeletionVectorRows: 2},
			due: true, kind: KindRewritePositionDeletes, measured: 2},
		{name: "v2, one Parquet position delete: below delete_min_input_files",
			c: Counters{DataFiles: 10, Rows: 100000, PositionDeleteFiles: 1, PositionDeleteRows: 2, DeleteBytes: 2000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks, kind, reason, apply, due := partitionDue(tt.c, set, time.Now())
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
			_, kind, _, apply, due = partitionDue(tt.c, set, time.Now(), KindRewritePositionDeletes)
			if !due || kind != KindCompact || !apply {
				t.Errorf("after the rewrite settled: %q apply=%v due=%v, want a compaction applying deletes", kind, apply, due)
			}
			if _, kind, _, _, due := partitionDue(tt.c, set, time.Now(), KindRewritePositionDeletes, KindCompact); due {
				t.Errorf("both settled: still due for %q", kind)
			}
		})
	}
}
