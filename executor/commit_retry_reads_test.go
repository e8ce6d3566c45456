package executor_test

import (
	"slices"
	"testing"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// snapshotFiles lists a snapshot's manifest list and the manifests it
// added: what reading that one commit costs.
func snapshotFiles(t *testing.T, f *fixture, id int64) []string {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.Metadata().SnapshotByID(id)
	manifests, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{snap.ManifestList}
	for _, m := range manifests {
		if m.SnapshotID() == id {
			out = append(out, m.FilePath())
		}
	}
	return out
}

// A commit retry after a lost race reads only what the commits since the
// previous attempt wrote (their manifest lists and the manifests they
// added), not the table's history: the same files at 50 and at 1,000
// snapshots. The writers that raced appended to the partition being
// compacted and added position and equality deletes elsewhere; rows and
// checksum stay exact.
func TestConflictRetryReadsOnlyNewSnapshots(t *testing.T) {
	for _, history := range []int{50, 1000} {
		t.Run(map[int]string{50: "50 snapshots", 1000: "1000 snapshots"}[history], func(t *testing.T) {
			if history > 100 && testing.Short() {
				t.Skip("builds 1,000 snapshots (10-25 s)")
			}
			f := newFixture(t, streamwriter.MergeOnReadProperties)
			for range 6 {
				f.commit("a", 10)
			}
			f.commit("b", 10)
			extra := growHistory(t, f, history-7)
			if n := len(f.load().Metadata().Snapshots()); n != history {
				t.Fatalf("setup: %d snapshots, want %d", n, history)
			}
			counter := &countingIO{}
			f.icat.wrapFS = counter.wrap
			var (
				mark     int
				raced    []int64
				prepared []string
				retry    []string
			)
			f.icat.beforeNextCommits(
				func() {
					prepared = counter.since(0)
					mark = counter.mark()
					for _, c := range []func() (int64, error){
						func() (int64, error) { return f.writer.Commit(f.ctx, "a", 5) },
						func() (int64, error) { return f.writer.DeleteRows(f.ctx, 62) },
						func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 65) },
					} {
						id, err := c()
						if err != nil {
							t.Error(err)
						}
						raced = append(raced, id)
					}
				},
				func() { retry = counter.since(mark) },
			)
			res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
			if res.Outcome != jobs.Succeeded || rep.Attempts != 2 || rep.Conflicts != 1 {
				t.Fatalf("outcome %v after %d attempts, %d conflicts (want success on the 2nd): %v", res.Outcome, rep.Attempts, rep.Conflicts, res.Err)
			}
			var want []string
			for _, id := range raced {
				want = append(want, snapshotFiles(t, f, id)...)
			}
			slices.Sort(want)
			slices.Sort(retry)
			t.Logf("history %d snapshots: planning, rewriting and staging opened %d files; the retry opened %d",
				history, len(prepared), len(retry))
			if !slices.Equal(retry, want) {
				t.Errorf("the retry opened %d files %v\nwant exactly the %d files of the %d commits it raced: %v",
					len(retry), retry, len(want), len(raced), want)
			}
			wantRows := f.writer.Written()
			wantRows.Merge(extra)
			got := f.contents()
			if got.Total != wantRows {
				t.Errorf("table %v, want %v", got.Total, wantRows)
			}
			for _, id := range []int64{62, 65} {
				if got.IDs[id] != 0 {
					t.Errorf("deleted id %d visible", id)
				}
			}
		})
	}
}
