package worker

import (
	"slices"
	"testing"
)

// A writer makes many small commits to partition A and two to partition B:
// reactor compacts A only, B's files are untouched, A ends at or under the
// threshold, and the table holds exactly what was written.
func TestCompactsOnlyThePartitionOverThreshold(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	w := h.start()

	h.commit("b", 10)
	h.commit("b", 10)
	for range 12 {
		h.commit("a", 20)
	}
	bBefore := h.files()["b"]
	if len(bBefore) != 2 {
		t.Fatalf("partition b has %d files before, want 2", len(bBefore))
	}

	h.eventually("a compaction job succeeds", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	h.eventually("partition a at or under the threshold", func() bool { return len(h.files()["a"]) <= 5 })

	files := h.files()
	bAfter := files["b"]
	slices.Sort(bBefore)
	slices.Sort(bAfter)
	if !slices.Equal(bBefore, bAfter) {
		t.Errorf("partition b files changed:\nbefore %v\nafter  %v", bBefore, bAfter)
	}
	got := h.contents()
	want := h.writer.Written()
	if got.Total != want {
		t.Errorf("table holds %v, writer wrote %v", got.Total, want)
	}
	if got.Total.Rows != 12*20+2*10 {
		t.Errorf("rows = %d, want %d", got.Total.Rows, 12*20+2*10)
	}
	for id, n := range got.IDs {
		if n != 1 {
			t.Errorf("id %d present %d times", id, n)
		}
	}
	st := w.Pool.Stats()
	if st.FilesRewritten < 12-5 || st.Failed != 0 {
		t.Errorf("pool stats = %+v, want >= 7 files rewritten and no failures", st)
	}
	t.Logf("partition a: %d files after compaction; pool %+v", len(files["a"]), st)
}
