package executor_test

import (
	"errors"
	"maps"
	"testing"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
)

// A v3 table whose rows were deleted through deletion vectors compacts
// into files without them: the rows read exactly as before, every
// surviving row keeps its _row_id and _last_updated_sequence_number (the
// spec's row lineage through a rewrite), and no deletion vector is left
// naming a rewritten file.
func TestV3CompactionAppliesDeletionVectorsAndKeepsLineage(t *testing.T) {
	f := newFixture(t, v3Props())
	for range 4 {
		f.commit("a", 20) // ids 1..80
	}
	f.commit("b", 10) // ids 81..90
	pdmDelete(t, f, 3, 25, 26, 47, 85)
	pdmDelete(t, f, 4, 61) // a second DV for 3's file
	if len(v3DVs(t, f)) == 0 {
		t.Fatal("deletes wrote no deletion vectors")
	}
	before, lineage := f.contents(), v3RowLineage(t, f)

	res, rep := f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5, min_input_files: 1}", "a", "b")))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	t.Logf("report: %+v", rep)
	sameContents(t, "after compaction", before, f.contents())
	if got := v3RowLineage(t, f); !maps.Equal(got, lineage) {
		t.Errorf("row lineage changed by compaction:\n got %v\nwant %v", got, lineage)
	}
	if dvs := v3DVs(t, f); len(dvs) != 0 {
		t.Errorf("%d deletion vectors left after compacting every partition", len(dvs))
	}
	v3AssertDVRules(t, f)
}

// A writer's deletion vectors committed while a v3 compaction is in
// flight: against a file being rewritten they abandon it (ErrNewDeletes:
// committing would bring the rows back; a writer deleting before every
// re-plan's commit makes the job give up); against another partition they
// cost one retry and stay. Rows and lineage exact either way.
func TestV3CompactionWithConcurrentDeletes(t *testing.T) {
	f := newFixture(t, v3Props())
	for range 6 {
		f.commit("a", 10) // ids 1..60
	}
	f.commit("b", 10) // ids 61..70
	pdmDelete(t, f, 1, 2)
	job := applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5, min_input_files: 1}", "a"))

	// A delete before each re-plan's commit too: the job gives up.
	f.icat.beforeNextCommits(func() { pdmDelete(t, f, 30, 31) }, func() { pdmDelete(t, f, 32) }, func() { pdmDelete(t, f, 33) })
	res, _ := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.GaveUp || !errors.Is(res.Err, executor.ErrNewDeletes) {
		t.Fatalf("outcome %v, err %v; want the rewrite to give up on ErrNewDeletes", res.Outcome, res.Err)
	}
	if got := f.contents(); got.Total != f.writer.Written() {
		t.Fatalf("after the abandoned rewrite: table %v, writer %v", got.Total, f.writer.Written())
	}
	lineage := v3RowLineage(t, f)

	f.icat.beforeNextCommits(func() { pdmDelete(t, f, 65) })
	res, rep := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (%v), conflicts %d; want success after one conflict", res.Outcome, res.Err, rep.Conflicts)
	}
	if got := f.contents(); got.Total != f.writer.Written() {
		t.Errorf("table %v, writer %v", got.Total, f.writer.Written())
	}
	if got := v3RowLineage(t, f); !maps.Equal(got, v3LineageWithout(lineage, 65)) {
		t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
	}
	v3AssertDVRules(t, f)
}
