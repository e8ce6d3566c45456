package executor_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// everCommitted is every file a snapshot of the table's history added or
// removed: a file on disk outside it was never committed, so if a job wrote
// it and its commit failed, the job should have deleted it.
func everCommitted(t *testing.T, f *fixture) map[string]bool {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		manifests, err := snap.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			for entry, err := range m.Entries(fs, false) {
				if err != nil {
					t.Fatal(err)
				}
				out[entry.DataFile().FilePath()] = true
			}
		}
	}
	return out
}

// leftOnDisk lists the files under the data directory that are new since
// before and that no snapshot ever held: outputs of an abandoned attempt.
func leftOnDisk(t *testing.T, f *fixture, before map[string]bool) []string {
	t.Helper()
	committed := everCommitted(t, f)
	var left []string
	for p := range f.filesOnDisk() {
		if !before[p] && !committed[p] && !committed["file://"+p] {
			left = append(left, p)
		}
	}
	slices.Sort(left)
	return left
}

// A writer that deletes rows of a compaction's inputs after the job
// planned and before it commits makes the commit's validation refuse the
// outputs (they hold those rows). With nothing of the job committed, the
// job deletes them and plans again on the table with the writer's deletes:
// the rewrite then commits, every deleted row stays deleted, and the
// abandoned attempt leaves nothing on disk.
func TestCompactionReplansAfterConcurrentDeletes(t *testing.T) {
	rows := func(f *fixture, ids ...int64) (int64, error) { return f.writer.DeleteRows(f.ctx, ids...) }
	keys := func(f *fixture, ids ...int64) (int64, error) { return f.writer.DeleteKeys(f.ctx, ids...) }
	const binPack = "defaults: {target_file_size: 1MiB, small_file_count: 5}"
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
		del   func(f *fixture, ids ...int64) (int64, error)
		kind  jobkind.Kind
		yaml  string
	}{
		{"position deletes", streamwriter.MergeOnReadProperties, rows, jobkind.Compact, binPack},
		{"equality deletes", streamwriter.MergeOnReadProperties, keys, jobkind.Compact, binPack},
		// Format v3 commits through iceberg-go's transaction, re-staged
		// each attempt (commitBatchReplay): the same validation.
		{"deletion vectors", v3Props(), rows, jobkind.Compact, binPack},
		// The sort job shares the rewrite's batches and commits.
		{"sort job", streamwriter.MergeOnReadProperties, keys, jobkind.Sort,
			"defaults: {target_file_size: 1MiB, strategy: sort, sort_order: 'id DESC'}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.props)
			for range 6 {
				f.commit("a", 10) // ids 1..60
			}
			f.commit("b", 10) // ids 61..70
			before := f.contents()
			onDisk := f.filesOnDisk()
			inputs := f.dataFiles("a")

			f.icat.beforeNextCommits(func() { mustDelete(t, func() (int64, error) { return tc.del(f, 30, 31) }) })
			job := f.job(tc.yaml, "a")
			job.Kind = tc.kind
			res, rep := f.exec.Run(f.ctx, job)
			if res.Outcome != jobs.Succeeded || res.Err != nil {
				t.Fatalf("outcome %v, err %v; want success after a re-plan", res.Outcome, res.Err)
			}
			sameContents(t, "after the compaction", v3Without(before, "a", 30, 31), f.contents())
			if got := f.contents().Total; got != f.writer.Written() {
				t.Errorf("table %v, writer's live rows %v", got, f.writer.Written())
			}
			// The lost catalog race of the first attempt, and the re-plan.
			if rep.Conflicts != 2 {
				t.Errorf("conflicts %d, want 2 (the lost commit race and the re-plan)", rep.Conflicts)
			}
			if rep.Commits != 1 || rep.RewrittenDataFiles != len(inputs) || rep.OutputFilesCleanedUp == 0 {
				t.Errorf("report: %d commits, %d files rewritten (want 1 and %d), %d outputs cleaned up (want some)",
					rep.Commits, rep.RewrittenDataFiles, len(inputs), rep.OutputFilesCleanedUp)
			}
			if files := f.dataFiles("a"); len(files) != 1 {
				t.Errorf("partition a has %d data files, want the compaction's 1", len(files))
			}
			if left := leftOnDisk(t, f, onDisk); len(left) != 0 {
				t.Errorf("outputs of the abandoned attempt left on disk: %v", left)
			}
			if n := len(f.outputIntents()); n != 0 {
				t.Errorf("%d output intents left", n)
			}
		})
	}
}

// A writer that deletes from the inputs before every commit wins: after
// MaxRewriteReplans re-plans the job gives up (a conflict, the longer
// cool-down; not a failure), the table holds what the writer left and
// every output is gone.
func TestCompactionGivesUpWhenWriterKeepsDeleting(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10) // ids 1..60
	}
	before := f.contents()
	onDisk := f.filesOnDisk()
	inputs := f.dataFiles("a")

	// One delete before each plan's first commit: every plan reads the
	// table before that plan's delete.
	var deleted []int64
	var hooks []func()
	for i := range executor.MaxRewriteReplans + 1 {
		id := int64(10*i + 5)
		deleted = append(deleted, id)
		hooks = append(hooks, func() { mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, id) }) })
	}
	f.icat.beforeNextCommits(hooks...)
	res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if res.Outcome != jobs.GaveUp || !errors.Is(res.Err, executor.ErrNewDeletes) {
		t.Fatalf("outcome %v, err %v; want gave_up with ErrNewDeletes", res.Outcome, res.Err)
	}
	sameContents(t, "after the job", v3Without(before, "a", deleted...), f.contents())
	if got := f.dataFiles("a"); !maps.Equal(got, inputs) {
		t.Errorf("data files changed:\n got %v\nwant %v", got, inputs)
	}
	// Each plan lost one commit race; the first two were planned again.
	if want := executor.MaxRewriteReplans + 1 + executor.MaxRewriteReplans; rep.Conflicts != want {
		t.Errorf("conflicts %d, want %d", rep.Conflicts, want)
	}
	if rep.Commits != 0 || rep.OutputFilesCleanedUp == 0 {
		t.Errorf("report: %d commits (want 0), %d outputs cleaned up (want some)", rep.Commits, rep.OutputFilesCleanedUp)
	}
	if left := leftOnDisk(t, f, onDisk); len(left) != 0 {
		t.Errorf("outputs left on disk: %v", left)
	}
	if n := len(f.outputIntents()); n != 0 {
		t.Errorf("%d output intents left", n)
	}
}

// A job that committed a batch before a writer's deletes abandoned a later
// one keeps what it committed (Succeeded, partial progress) and is not
// planned again: the abandoned batch's partition waits for the next job.
func TestCompactionKeepsPartialProgressOverConcurrentDeletes(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10) // ids 1..60
	}
	for range 6 {
		f.commit("b", 10) // ids 61..120
	}
	before := f.contents()
	onDisk := f.filesOnDisk()
	inputs := map[string]map[string]int64{"a": f.dataFiles("a"), "b": f.dataFiles("b")}

	// One batch per partition. The first commits; before the second's
	// commit the writer deletes a row of each partition: against the
	// committed batch's output (applies to it, a retry), and against the
	// second batch's inputs (abandons it).
	f.icat.beforeNextCommits(func() {}, func() { mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 5, 65) }) })
	res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5, partial_progress_max_commits: 2}", "a", "b"))
	if res.Outcome != jobs.Succeeded || !errors.Is(res.Err, executor.ErrNewDeletes) {
		t.Fatalf("outcome %v, err %v; want succeeded with the second batch's ErrNewDeletes", res.Outcome, res.Err)
	}
	if rep.Commits != 1 || rep.FailedBatches != 1 || rep.Conflicts != 1 {
		t.Errorf("report: %d commits, %d failed batches, %d conflicts; want 1, 1 and 1 (no re-plan)",
			rep.Commits, rep.FailedBatches, rep.Conflicts)
	}
	got := f.contents()
	sameContents(t, "after the job", v3Without(v3Without(before, "a", 5), "b", 65), got)
	if got.Total != f.writer.Written() {
		t.Errorf("table %v, writer's live rows %v", got.Total, f.writer.Written())
	}
	var compacted, kept int
	for _, c := range []string{"a", "b"} {
		switch files := f.dataFiles(c); {
		case len(files) == 1:
			compacted++
		case maps.Equal(files, inputs[c]):
			kept++
		default:
			t.Errorf("partition %s: data files %v, want one output or its inputs %v", c, files, inputs[c])
		}
	}
	if compacted != 1 || kept != 1 {
		t.Errorf("%d partitions compacted, %d kept as they were; want 1 and 1", compacted, kept)
	}
	if left := leftOnDisk(t, f, onDisk); len(left) != 0 {
		t.Errorf("outputs of the abandoned batch left on disk: %v", left)
	}
}
