package worker

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/planner"
)

// A writer makes many small commits to partition A and two to partition B:
// reactor compacts A only, B's files are untouched, A ends at or under the
// threshold, and the table holds exactly what was written.
func TestCompactsOnlyThePartitionOverThreshold(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	health, err := h.conn.SubscribeSync("reactor.health.db.events")
	if err != nil {
		t.Fatal(err)
	}
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

	// Each job's end published the table's health report; the last one
	// describes the table as it is now (under -race, commits are slow
	// enough for compaction to run more than once).
	live := len(files["a"]) + len(files["b"])
	var rep planner.Health
	for rep.DataFiles != live || rep.SnapshotID != h.load().CurrentSnapshot().SnapshotID {
		msg, err := health.NextMsg(time.Minute)
		if err != nil {
			t.Fatalf("no health report of the final state (last: %+v): %v", rep, err)
		}
		if err := json.Unmarshal(msg.Data, &rep); err != nil {
			t.Fatal(err)
		}
	}
	if rep.Table != "db.events" || rep.Snapshots < 15 || rep.TinyFiles != rep.DataFiles || !rep.Healthy {
		t.Errorf("health report %+v; table has %d files", rep, live)
	}
}

// Streaming appends add one manifest each; once the table has
// manifest_count of them reactor rewrites them, clustered by partition, and
// its own rewrite does not trigger another.
func TestManifestRewriteAfterStreamingAppends(t *testing.T) {
	cfg := strings.Replace(testThresholds, "small_file_count: 5", "small_file_count: 1000", 1) + "  manifest_count: 8\n"
	h := newHarness(t, cfg, nil)
	w := h.start()
	for i := range 10 {
		h.commit([]string{"a", "b"}[i%2], 10)
	}
	h.eventually("manifest rewrite", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	tbl := h.load()
	fs, err := tbl.FS(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) > 4 {
		t.Errorf("%d manifests after the rewrite, want at most 4 (2 partitions, plus appends racing it)", len(ms))
	}
	for range 3 {
		h.commit("a", 10)
	}
	h.eventually("later events applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		return snap == h.load().CurrentSnapshot().SnapshotID
	})
	if n := testutil.ToFloat64(w.Metrics.JobsScheduled.WithLabelValues("rewrite_manifests")); n != 1 {
		t.Errorf("%v manifest rewrites scheduled, want 1", n)
	}
	if got := h.contents().Total; got != h.writer.Written() {
		t.Errorf("table %v, written %v", got, h.writer.Written())
	}
}
