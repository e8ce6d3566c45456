package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

// A writer leaves fewer small files than small_file_count in two
// partitions (the tier rule never merges them) and stops. Once each has
// been quiet for compact_when_quiet_after, reactor merges it, once: the
// table ends at the ideal file count, with the same rows and checksum, and
// a later look finds nothing more to do.
func TestQuietPartitionsEndCompacted(t *testing.T) {
	cfg := testThresholds + "  compact_when_quiet_after: 1s\n"
	h := newHarness(t, cfg, nil)
	w := h.start()
	for i := range 7 {
		h.commit([]string{"a", "b"}[i%2], 20)
	}
	before := h.contents()
	if before.Total != h.writer.Written() {
		t.Fatalf("before: table %v, written %v", before.Total, h.writer.Written())
	}
	if f := h.files(); len(f["a"]) != 4 || len(f["b"]) != 3 {
		t.Fatalf("before: %d and %d files, want 4 and 3 (below small_file_count 5)", len(f["a"]), len(f["b"]))
	}

	h.eventually("both partitions at the ideal file count", func() bool {
		f := h.files()
		return len(f["a"]) == 1 && len(f["b"]) == 1
	})
	h.eventually("the merges' commits applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		st := w.Pool.Stats()
		return snap == h.load().CurrentSnapshot().SnapshotID && st.Jobs == st.Succeeded+st.Noop+st.GaveUp+st.Failed
	})
	after := h.contents()
	if after.Total != before.Total || after.Total != h.writer.Written() {
		t.Errorf("after: table %v, before %v, written %v", after.Total, before.Total, h.writer.Written())
	}
	for id, n := range after.IDs {
		if n != 1 {
			t.Errorf("id %d present %d times", id, n)
		}
	}
	for _, part := range []string{"a", "b"} {
		n := 0
		for _, line := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(line, "partition quiet: merging") && strings.Contains(line, "category="+part) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("partition %s: %d quiet merges logged, want 1:\n%s", part, n, h.logs.String())
		}
	}

	// A second look, however much later, schedules nothing: the
	// partitions are at what a merge can reach.
	th, err := thresholds.Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.Explain(h.ctx, h.load(), th, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Jobs) != 0 {
		t.Errorf("an hour later the plan has %d jobs, want none: %+v", len(plan.Jobs), plan.Jobs)
	}
	_, parts := w.Planner.TableCounters("db.events")
	for _, pc := range parts {
		if _, ideal, reduces := planner.QuietMerge(pc.Counters, th.For("db.events", nil)); reduces || pc.DataFiles != ideal {
			t.Errorf("%s: %d files, ideal %d, a merge would reduce them: %v", pc.Key, pc.DataFiles, ideal, reduces)
		}
	}
	if st := w.Pool.Stats(); st.Failed != 0 || st.GaveUp != 0 {
		t.Errorf("pool %+v, want no failed or abandoned job", st)
	}
}
