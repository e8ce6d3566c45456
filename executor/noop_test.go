package executor_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// A job that looped without progress: a partition holds a file too large to rewrite
// (C), a small file written after it (A) and an equality delete whose key
// is in neither. The delete compaction used to rewrite A into an identical
// file every cool-down while C and the delete stayed. Now A is left alone
// (one file, nothing applying: the output would be the input), and the
// delete, which provably applies to no live file, goes in a metadata-only
// commit; a second run finds nothing to do and says so.
func TestDeleteCompactionRemovesADeleteThatAppliesToNothing(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("p0", 2000) // C: ids 1..2000
	f.commit("p0", 5)    // A: ids 2001..2005
	f.commit("p1", 10)   // ids 2006..2015: the deleted key lives in another partition
	if _, err := f.writer.DeleteKeysIn(f.ctx, "p0", 2010); err != nil {
		t.Fatal(err)
	}
	files := f.dataFiles("p0")
	var sizeC int64
	for _, s := range files {
		sizeC = max(sizeC, s)
	}
	// C is over max_file_size, A below the small size; min_input_files 1
	// makes A a group of its own, as random thresholds did.
	yaml := fmt.Sprintf("defaults: {target_file_size: %d, min_input_files: 1, small_file_count: 1}", sizeC/3)
	before := f.contents()
	if eq := deleteFilesByKind(t, f, "p0")[iceberg.EntryContentEqDeletes]; len(eq) != 1 {
		t.Fatalf("setup: %d equality delete files in p0", len(eq))
	}

	res, rep := f.exec.Run(f.ctx, applyDeletes(f.job(yaml, "p0")))
	if res.Outcome != jobs.Succeeded || res.Err != nil {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.RewrittenDataFiles != 0 || rep.RemovedDeleteFiles != 1 || rep.Commits != 1 {
		t.Errorf("report: rewrote %d data files, removed %d delete files in %d commits; want 0, 1, 1",
			rep.RewrittenDataFiles, rep.RemovedDeleteFiles, rep.Commits)
	}
	if got := f.dataFiles("p0"); !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(files))) {
		t.Errorf("data files of p0 changed: %v -> %v", files, got)
	}
	if left := deleteFilesByKind(t, f, "p0"); len(left) != 0 {
		t.Errorf("delete files left in p0: %v", left)
	}
	if after := f.contents(); after.Total != before.Total || after.Total != f.writer.Written() {
		t.Errorf("rows %v after, %v before, writer %v", after.Total, before.Total, f.writer.Written())
	}

	res, rep = f.exec.Run(f.ctx, applyDeletes(f.job(yaml, "p0")))
	if res.Outcome != jobs.Noop || rep.Commits != 0 {
		t.Fatalf("second run: outcome %v (err %v), %d commits; want a no-op", res.Outcome, res.Err, rep.Commits)
	}
	if res.NothingToDo["category=p0"] == "" {
		t.Errorf("second run does not say why p0 needs nothing: %v", res.NothingToDo)
	}
}

// A delete that still applies to a live row is never removed by the sweep,
// even where it sits beside files it cannot reach: its key is inside a
// file's range and that file is older.
func TestDeadDeleteSweepKeepsDeletesThatApply(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("p0", 2000)                                                // C
	f.commit("p0", 5)                                                   // A
	if _, err := f.writer.DeleteKeysIn(f.ctx, "p0", 1500); err != nil { // in C
		t.Fatal(err)
	}
	var sizeC int64
	for _, s := range f.dataFiles("p0") {
		sizeC = max(sizeC, s)
	}
	yaml := fmt.Sprintf("defaults: {target_file_size: %d, min_input_files: 1, small_file_count: 1}", sizeC/3)
	res, rep := f.exec.Run(f.ctx, applyDeletes(f.job(yaml, "p0")))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	// The delete applies to C, so C is rewritten whatever its size, and
	// the delete then goes with it.
	got := f.contents()
	if got.IDs[1500] != 0 || got.Total != f.writer.Written() {
		t.Errorf("id 1500 occurs %d times; table %v, writer %v", got.IDs[1500], got.Total, f.writer.Written())
	}
	if rep.RewrittenDataFiles != 1 || rep.RemovedDeleteFiles != 1 {
		t.Errorf("rewrote %d data files, removed %d delete files; want 1 and 1", rep.RewrittenDataFiles, rep.RemovedDeleteFiles)
	}
	if left := deleteFilesByKind(t, f, "p0"); len(left) != 0 {
		t.Errorf("delete files left in p0: %v", left)
	}
}
