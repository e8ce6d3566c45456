package executor_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// deleteFilesByKind lists the live delete files of one partition by kind,
// from the current snapshot's delete manifests (a delete that applies to no
// data file is still live there, and still costs every scan planning).
func deleteFilesByKind(t *testing.T, f *fixture, category string) map[iceberg.ManifestEntryContent][]string {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[iceberg.ManifestEntryContent][]string{}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatal(err)
			}
			d := entry.DataFile()
			if fmt.Sprint(d.Partition()[1000]) == category {
				out[d.ContentType()] = append(out[d.ContentType()], d.FilePath())
			}
		}
	}
	for _, paths := range out {
		slices.Sort(paths)
	}
	return out
}

// applyDeletes marks every partition of the job as delete-triggered.
func applyDeletes(j jobs.Job) jobs.Job {
	for i := range j.Partitions {
		j.Partitions[i].ApplyDeletes = true
	}
	return j
}

// mustDelete runs one of the writer's delete methods.
func mustDelete(t *testing.T, del func() (int64, error)) {
	t.Helper()
	if _, err := del(); err != nil {
		t.Fatal(err)
	}
}

// A compaction triggered by deletes applies position and equality deletes
// while reading, removes every delete file it leaves applying to nothing in
// the same commit, and leaves other partitions' deletes alone.
func TestDeleteCompactionAppliesPositionAndEqualityDeletes(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10) // ids 1..60
	}
	f.commit("b", 10) // ids 61..70
	mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 3, 17, 44) })
	mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 5, 62) })
	mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 21, 59, 65) })
	before := deleteFilesByKind(t, f, "a")
	if len(before[iceberg.EntryContentPosDeletes]) != 2 || len(before[iceberg.EntryContentEqDeletes]) != 1 {
		t.Fatalf("setup: partition a delete files %v", before)
	}
	bDeletes := deleteFilesByKind(t, f, "b")

	res, rep := f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	got := f.contents()
	if got.Total != f.writer.Written() {
		t.Errorf("table holds %v, writer's live rows %v", got.Total, f.writer.Written())
	}
	for _, id := range []int64{3, 5, 17, 21, 44, 59, 62, 65} {
		if got.IDs[id] != 0 {
			t.Errorf("deleted id %d is visible again", id)
		}
	}
	if after := deleteFilesByKind(t, f, "a"); len(after) != 0 {
		t.Errorf("partition a still has delete files %v", after)
	}
	if rep.RemovedDeleteFiles != 3 || rep.RewrittenDataFiles != 6 || rep.AddedDataFiles != 1 {
		t.Errorf("report: removed %d delete files (want 3), rewrote %d (want 6), added %d (want 1)",
			rep.RemovedDeleteFiles, rep.RewrittenDataFiles, rep.AddedDataFiles)
	}
	if after := deleteFilesByKind(t, f, "b"); fmt.Sprint(after) != fmt.Sprint(bDeletes) {
		t.Errorf("partition b deletes changed: %v -> %v", bDeletes, after)
	}
}

// A right-sized data file with one delete against it is skipped by a
// small-file compaction but rewritten when deletes triggered the job: the
// delete can only go once nothing it applies to survives.
func TestDeleteCompactionRewritesRightSizedFilesCarryingDeletes(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("a", 3000) // one right-sized file
	var size int64
	for _, s := range f.dataFiles("a") {
		size = s
	}
	mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 10, 20, 30) })
	yaml := fmt.Sprintf("defaults: {target_file_size: %d, min_input_files: 1, small_file_count: 1}", size)

	res, rep := f.exec.Run(f.ctx, f.job(yaml, "a"))
	if res.Outcome != jobs.Noop || rep.RewrittenDataFiles != 0 {
		t.Fatalf("small-file compaction: outcome %v, rewrote %d; want a no-op", res.Outcome, rep.RewrittenDataFiles)
	}
	res, rep = f.exec.Run(f.ctx, applyDeletes(f.job(yaml, "a")))
	if res.Outcome != jobs.Succeeded || rep.RewrittenDataFiles != 1 || rep.RemovedDeleteFiles != 1 {
		t.Fatalf("delete compaction: outcome %v (%v), rewrote %d, removed %d deletes; want 1 and 1",
			res.Outcome, res.Err, rep.RewrittenDataFiles, rep.RemovedDeleteFiles)
	}
	if got := f.contents(); got.Total != f.writer.Written() || got.IDs[10]+got.IDs[20]+got.IDs[30] != 0 {
		t.Errorf("table %v, writer %v", got.Total, f.writer.Written())
	}
	if n := len(deleteFilesByKind(t, f, "a")); n != 0 {
		t.Errorf("%d kinds of delete files left", n)
	}
}

// Equality deletes a CDC writer commits while the rewrite is in flight:
// against the rewritten partition they abandon it (committing would
// resurrect the rows they delete), and a writer deleting before every
// re-plan's commit makes the job give up; against another partition they
// cost one retry and stay.
func TestConcurrentEqualityDeletesDuringDeleteCompaction(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10)
	}
	f.commit("b", 10)
	mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 1, 2) })
	job := applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))

	f.icat.beforeNextCommits(
		func() { mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 30, 31) }) },
		func() { mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 32) }) },
		func() { mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 33) }) })
	res, _ := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.GaveUp || !errors.Is(res.Err, executor.ErrNewDeletes) {
		t.Fatalf("outcome %v, err %v; want the rewrite to give up on ErrNewDeletes", res.Outcome, res.Err)
	}
	if got := f.contents(); got.Total != f.writer.Written() || got.IDs[30]+got.IDs[31]+got.IDs[32]+got.IDs[33] != 0 {
		t.Fatalf("after the abandoned rewrite: table %v, writer %v", got.Total, f.writer.Written())
	}

	f.icat.beforeNextCommits(func() { mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 65) }) })
	res, rep := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (%v), conflicts %d; want success after one conflict", res.Outcome, res.Err, rep.Conflicts)
	}
	got := f.contents()
	if got.Total != f.writer.Written() {
		t.Errorf("table %v, writer %v", got.Total, f.writer.Written())
	}
	for _, id := range []int64{1, 2, 30, 31, 32, 33, 65} {
		if got.IDs[id] != 0 {
			t.Errorf("deleted id %d is visible again", id)
		}
	}
	if n := len(deleteFilesByKind(t, f, "b")[iceberg.EntryContentEqDeletes]); n != 1 {
		t.Errorf("partition b has %d equality delete files, want the writer's 1", n)
	}
}

// Delete files whose rows name data files of two partitions: X is bound to
// partition a and names a file of a and one of b (as a partition-scoped
// delete it applies only in a: b's row stays visible); Y is bound to a but
// names only b's file with exact bounds (file-scoped: it applies to b's file
// by path). Compacting a, then b, with deletes applied changes no row; each
// delete file goes once nothing it applies to survives.
func TestDeleteCompactionWithCrossPartitionDeleteFiles(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("b", 10) // ids 1..10
	for range 6 {
		f.commit("a", 10) // ids 11..70
	}
	at := pdmLocate(t, f, 61, 5, 7)
	x := pdmWriteDeleteFile(t, f, "a", "-x-deletes.parquet", []pdmRow{at[61], at[5]})
	y := pdmWriteDeleteFile(t, f, "a", "-y-deletes.parquet", []pdmRow{at[7]})
	txn := f.load().NewTransaction()
	if err := txn.NewRowDelta(nil).AddDeletes(x, y).Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	before := f.contents()
	if before.IDs[61] != 0 || before.IDs[5] != 1 || before.IDs[7] != 0 {
		t.Fatalf("setup: ids 61, 5, 7 occur %d, %d, %d times; want 0, 1, 0", before.IDs[61], before.IDs[5], before.IDs[7])
	}
	yaml := "defaults: {target_file_size: 1MiB, small_file_count: 5}"
	for _, partition := range []string{"a", "b"} {
		res, rep := f.exec.Run(f.ctx, applyDeletes(f.job(yaml, partition)))
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("compacting %s: outcome %v, err %v", partition, res.Outcome, res.Err)
		}
		after := f.contents()
		if after.Total != before.Total || after.IDs[61] != 0 || after.IDs[5] != 1 || after.IDs[7] != 0 {
			t.Fatalf("after compacting %s: %v, ids 61, 5, 7 occur %d, %d, %d times; before %v",
				partition, after.Total, after.IDs[61], after.IDs[5], after.IDs[7], before.Total)
		}
		t.Logf("compacting %s removed %d delete files", partition, rep.RemovedDeleteFiles)
	}
	if left := deleteFilesByKind(t, f, "a"); len(left) != 0 {
		t.Errorf("delete files bound to a still live after both partitions were rewritten: %v", left)
	}
}
