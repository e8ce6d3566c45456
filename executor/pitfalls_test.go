package executor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
)

// deleteIDs deletes rows by id with merge-on-read position deletes, through
// iceberg-go as a CDC writer would.
func deleteIDs(t *testing.T, f *fixture, ids ...int64) {
	t.Helper()
	tbl := f.load()
	txn := tbl.NewTransaction()
	if err := txn.Delete(f.ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
}

func positionDeleteFiles(t *testing.T, f *fixture) []string {
	t.Helper()
	tbl := f.load()
	tasks, err := tbl.Scan().PlanFiles(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, task := range tasks {
		for _, d := range task.DeleteFiles {
			if !seen[d.FilePath()] {
				seen[d.FilePath()] = true
				out = append(out, d.FilePath())
			}
		}
	}
	return out
}

// A partition with one right-sized file and several small files sharing one
// position-delete file. The compaction rewrites only the small files; the
// delete file still applies to the right-sized one and must stay, so no
// deleted row comes back (docs/design.md#pitfall-resurrected-deletes).
func TestCompactionKeepsSharedPositionDeletesOfSkippedFiles(t *testing.T) {
	f := newFixture(t, iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	f.commit("a", 3000) // ids 1..3000: the right-sized file
	var bigSize int64
	for _, size := range f.dataFiles("a") {
		bigSize = size
	}
	for range 6 {
		f.commit("a", 10) // ids 3001..3060: small files
	}
	// One delete touching the big file and every small file: iceberg-go
	// writes one partition-scoped position-delete file for them.
	var deleted []int64
	for id := int64(1); id <= 3060; id += 15 {
		deleted = append(deleted, id)
	}
	deleteIDs(t, f, deleted...)
	if n := len(positionDeleteFiles(t, f)); n != 1 {
		t.Fatalf("setup: %d position delete files, want 1 shared one", n)
	}
	before := f.contents()
	if before.Total.Rows != 3060-int64(len(deleted)) {
		t.Fatalf("setup: %d rows before, want %d", before.Total.Rows, 3060-len(deleted))
	}

	// Target size = the big file's size: it is right-sized, the rest small.
	yaml := fmt.Sprintf("defaults: {target_file_size: %d, small_file_count: 5, min_input_files: 5}", bigSize)
	res, rep := f.exec.Run(f.ctx, f.job(yaml, "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.RewrittenDataFiles != 6 {
		t.Errorf("rewrote %d files, want the 6 small ones", rep.RewrittenDataFiles)
	}
	if rep.RemovedDeleteFiles != 0 {
		t.Errorf("removed %d delete files; the shared one still applies to the right-sized file", rep.RemovedDeleteFiles)
	}
	after := f.contents()
	if after.Total != before.Total {
		t.Errorf("rows after compaction %v, before %v: deleted rows came back", after.Total, before.Total)
	}
	for _, id := range deleted {
		if after.IDs[id] != 0 {
			t.Errorf("deleted id %d is visible again", id)
		}
	}
}

// When every data file a position delete applies to is rewritten, the
// delete file is dead and goes in the same commit.
func TestCompactionRemovesDeadPositionDeletes(t *testing.T) {
	f := newFixture(t, iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	for range 6 {
		f.commit("a", 10)
	}
	deleteIDs(t, f, 3, 17, 44)
	before := f.contents()
	res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.RemovedDeleteFiles != 1 {
		t.Errorf("removed %d delete files, want 1", rep.RemovedDeleteFiles)
	}
	if n := len(positionDeleteFiles(t, f)); n != 0 {
		t.Errorf("%d position delete files still live", n)
	}
	if after := f.contents(); after.Total != before.Total || after.IDs[3]+after.IDs[17]+after.IDs[44] != 0 {
		t.Errorf("after %v, before %v", after.Total, before.Total)
	}
}

// A partition-targeted rewrite never drops a row, and never touches another
// partition (docs/design.md#pitfall-residual-filters).
func TestPartitionTargetedRewriteKeepsEveryRow(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 8 {
		f.commit("a", 25+i)
		f.commit("b", 5)
	}
	before := f.contents()
	bFiles := f.dataFiles("b")
	res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	after := f.contents()
	if after.Total != before.Total {
		t.Errorf("table %v after, %v before", after.Total, before.Total)
	}
	for p, tally := range before.ByPartition {
		if after.ByPartition[p] != tally {
			t.Errorf("partition %s: %v after, %v before", p, after.ByPartition[p], tally)
		}
	}
	if n := len(f.dataFiles("a")); n != 1 {
		t.Errorf("partition a has %d files, want 1", n)
	}
	if got := f.dataFiles("b"); len(got) != len(bFiles) {
		t.Errorf("partition b has %d files, had %d", len(got), len(bFiles))
	}
}

// The SQL catalog reports a concurrent commit as a plain "requirement failed"
// error (docs/design.md#pitfall-sql-conflicts). The executor must treat it as
// a conflict: retry (not fail), count it, and commit on the next attempt.
func TestSQLCatalogConflictIsRetried(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	// A streaming writer commits to the same partition just before
	// reactor's first commit reaches the catalog.
	f.icat.beforeNextCommits(func() { f.commit("a", 7) })
	res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.Conflicts != 1 || rep.Attempts != 2 {
		t.Errorf("conflicts %d attempts %d, want 1 and 2", rep.Conflicts, rep.Attempts)
	}
	if got := testutil.ToFloat64(f.met.CommitConflicts.WithLabelValues("db.events")); got != 1 {
		t.Errorf("reactor_commit_conflicts_total = %v, want 1", got)
	}
	if got, want := f.contents().Total, f.writer.Written(); got != want {
		t.Errorf("table %v, written %v", got, want)
	}
	// The writer's concurrent file survives next to the compacted one.
	if n := len(f.dataFiles("a")); n != 2 {
		t.Errorf("partition a has %d files, want 2 (compacted + concurrent append)", n)
	}
	if rep.StagedMetadataCleanedUp == 0 {
		t.Errorf("the losing attempt's manifest list and manifests were not deleted")
	}
}

// A writer that adds deletes against the rewrite's inputs while it runs must
// make the rewrite fail validation: committing would resurrect the rows.
// The abandoned outputs are deleted and the job plans again, reading the
// inputs with the writer's deletes applied.
func TestConcurrentDeleteAgainstInputsAbandonsRewrite(t *testing.T) {
	f := newFixture(t, iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	for range 6 {
		f.commit("a", 10)
	}
	filesBefore := f.parquetFilesOnDisk()
	f.icat.beforeNextCommits(func() { deleteIDs(t, f, 2, 33) })
	res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v; want success after a re-plan", res.Outcome, res.Err)
	}
	c := f.contents()
	if c.IDs[2] != 0 || c.IDs[33] != 0 || c.Total.Rows != 58 {
		t.Errorf("rows %d (want 58), id2=%d id33=%d", c.Total.Rows, c.IDs[2], c.IDs[33])
	}
	if rep.OutputFilesCleanedUp == 0 || rep.Conflicts != 2 {
		t.Errorf("%d outputs of the abandoned rewrite deleted (want some), %d conflicts (want 2: the lost race and the re-plan)",
			rep.OutputFilesCleanedUp, rep.Conflicts)
	}
	// On disk: the 6 inputs, the writer's delete file and the re-plan's
	// one output; what must not be there is the abandoned plan's output.
	if got := f.parquetFilesOnDisk(); got != filesBefore+2 {
		t.Errorf("%d parquet files on disk, want %d (inputs + the writer's delete file + one output)", got, filesBefore+2)
	}
}

// A writer that only appends to the partition while the rewrite commits is
// not a reason to abandon: the append is kept and the rewrite retried.
func TestConcurrentAppendsDoNotBlockRewrite(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	f.icat.beforeNextCommits(func() { f.commit("a", 3) }, func() { f.commit("b", 3) }, func() { f.commit("a", 4) })
	res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.Conflicts != 3 {
		t.Errorf("conflicts = %d, want 3", rep.Conflicts)
	}
	if got, want := f.contents().Total, f.writer.Written(); got != want {
		t.Errorf("table %v, written %v", got, want)
	}
}

// An unknown job kind and a missing table fail cleanly with a clear error.
func TestBadJobsFailCleanly(t *testing.T) {
	f := newFixture(t, nil)
	j := f.job("", "a")
	j.Kind = jobkind.Kind(99)
	if res, _ := f.exec.Run(f.ctx, j); res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), `unknown job kind "kind(99)"`) {
		t.Errorf("unknown kind: %v %v", res.Outcome, res.Err)
	}
	j = f.job("", "a")
	j.Table = tablename.Of(table.Identifier{"db", "missing"})
	if res, _ := f.exec.Run(f.ctx, j); res.Outcome != jobs.Failed || res.Err == nil {
		t.Errorf("missing table: %v %v", res.Outcome, res.Err)
	}
	// Empty table: nothing to do.
	if res, _ := f.exec.Run(f.ctx, f.job("", "a")); res.Outcome != jobs.Noop {
		t.Errorf("empty table: %v %v", res.Outcome, res.Err)
	}
	_ = streamwriter.Tally{}
}

// The retry after a lost race goes on the writer's commit event, not at the
// end of its backoff, when the executor hears about commits.
func TestConflictRetryGoesOnTheWritersCommit(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	f.icat.beforeNextCommits(func() {
		f.commit("a", 7)
		f.exec.CommitObserved("db.events") // what the planner does on the commit event
	})
	res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (%v), %d conflicts; want success after one conflict", res.Outcome, res.Err, rep.Conflicts)
	}
	if rep.RetriesAfterCommit != 1 {
		t.Errorf("%d retries went on an observed commit, want 1", rep.RetriesAfterCommit)
	}
	if got, want := f.contents().Total, f.writer.Written(); got != want {
		t.Errorf("table %v, written %v", got, want)
	}
}
