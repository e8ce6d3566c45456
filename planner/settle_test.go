package planner

import (
	"testing"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
)

// A compaction that committed in one partition and found nothing in
// another settles the second one only: the first is scheduled again when
// it needs it, the second not until it is written.
func TestSucceededJobSettlesItsIdlePartitions(t *testing.T) {
	f := newSchedFixture(t, schedYAML)
	f.commit("a", 6)
	f.commit("b", 6)
	f.at(2 * time.Hour)
	got := f.takeJobs()
	if len(got) != 1 || len(got[0].Partitions) != 2 {
		t.Fatalf("jobs = %+v, want one job for a and b", got)
	}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Succeeded, NothingToDo: map[string]string{"category=b": "no group"}})
	f.at(5 * time.Hour) // past the cool-down; neither partition changed
	got = f.takeJobs()
	if len(got) != 1 || len(got[0].Partitions) != 1 || got[0].Partitions[0].Key != "category=a" {
		t.Fatalf("jobs = %+v, want a again (its files did not change here) and not b", got)
	}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
	f.commit("b", 1)
	f.at(8 * time.Hour)
	got = f.takeJobs()
	if len(got) != 1 || len(got[0].Partitions) != 1 || got[0].Partitions[0].Key != "category=b" {
		t.Fatalf("after a write to b: jobs = %+v, want b", got)
	}
}

// The position-delete rewrite finding nothing to merge hands the delete
// debt to a compaction that applies the deletes; that one finding nothing
// too leaves the partition alone until it is written.
func TestDeleteDebtFallsBackToCompaction(t *testing.T) {
	c := Counters{DataFiles: 2, Rows: 1000, Bytes: 2 << 20, PositionDeleteFiles: 6, PositionDeleteRows: 6, DeleteBytes: 6000}
	f := newSchedFixture(t, schedYAML)
	set := f.p.cfg.Load().For("db.t", nil)
	_, kind, _, _, due := dueOf(partitionDue(c, set, time.Now()))
	if !due || kind != jobkind.RewritePositionDeletes {
		t.Fatalf("first remedy %q (due %v), want rewrite_position_deletes", kind, due)
	}
	_, kind, reason, apply, due := dueOf(partitionDue(c, set, time.Now(), jobkind.RewritePositionDeletes))
	if !due || kind != jobkind.Compact || !apply {
		t.Fatalf("after the delete rewrite settled: %q apply=%v due=%v, want a compaction applying deletes", kind, apply, due)
	}
	if reason.Note == "" {
		t.Error("the fallback does not say why")
	}
	if _, kind, _, _, due := dueOf(partitionDue(c, set, time.Now(), jobkind.RewritePositionDeletes, jobkind.Compact)); due {
		t.Errorf("both settled: still due for %q", kind)
	}
}

// manifest_count at or below one manifest per partition is never acted
// on: the rewrite would write as many manifests as it read.
func TestManifestCheckFloor(t *testing.T) {
	for _, tc := range []struct {
		manifests, floor, limit int
		over                    bool
	}{
		{5, 5, 2, false}, // 5 partitions, 5 manifests: nothing to merge
		{6, 5, 2, true},
		{6, 5, 7, false}, // below the threshold
		{2, 1, 2, true},  // unpartitioned
	} {
		c := manifestCheck(tc.manifests, tc.floor, tc.limit)
		if c.Over != tc.over {
			t.Errorf("%d manifests, floor %d, manifest_count %d: over=%v, want %v", tc.manifests, tc.floor, tc.limit, c.Over, tc.over)
		}
		if !c.Over && tc.manifests >= tc.limit && c.Note == "" {
			t.Errorf("%d manifests at manifest_count %d but not over: no note says why", tc.manifests, tc.limit)
		}
	}
}
