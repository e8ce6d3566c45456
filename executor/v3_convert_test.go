package executor_test

import (
	"maps"
	"testing"

	"github.com/icereactor/reactor/jobs"
)

// convert_equality_deletes on a format v3 table writes deletion vectors:
// one per data file a converted delete matched, merged with the file's
// existing vector (which goes in the same snapshot). The rows and each
// row's lineage read as before, no equality delete is left, the v3 rules
// hold, and a second run finds nothing.
func TestV3ConversionWritesDeletionVectors(t *testing.T) {
	f := newFixture(t, v3Props())
	f.commit("a", 20) // ids 1..20
	f.commit("a", 20) // ids 21..40
	f.commit("b", 10) // ids 41..50
	pdmDelete(t, f, 3, 44)
	eqDelete(t, f, []int{1}, idKeys("a", 5, 25, 999)...)
	eqDelete(t, f, []int{1}, idKeys("b", 44, 45)...) // 44 is deleted already
	if n := eqDeleteFiles(t, f, "a", "b"); n != 2 {
		t.Fatalf("%d equality delete files, want 2", n)
	}
	before, lineage := f.contents(), v3RowLineage(t, f)
	nextRowID := f.load().Metadata().NextRowID()

	res, rep := f.exec.Run(f.ctx, convJob(f, "a", "b"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("conversion: %v %v", res.Outcome, res.Err)
	}
	if rep.Conversion.EqualityDeleteFilesRemoved != 2 || rep.Conversion.PositionDeleteFilesAdded != 3 || rep.RemovedDeleteFiles != 4 {
		t.Errorf("report: %+v, removed %d; want 2 equality deletes and 2 vectors replaced by 3 vectors", rep.Conversion, rep.RemovedDeleteFiles)
	}
	sameContents(t, "after the conversion", before, f.contents())
	if got := v3RowLineage(t, f); !maps.Equal(got, lineage) {
		t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
	}
	v3AssertLineageSnapshot(t, f, nextRowID)
	if n := eqDeleteFiles(t, f, "a", "b"); n != 0 {
		t.Errorf("%d equality delete files left", n)
	}
	dvs := v3DVs(t, f)
	if len(dvs) != 3 {
		t.Errorf("%d deletion vectors, want 3 (one per data file with deletes)", len(dvs))
	}
	var deleted int64
	for _, d := range dvs {
		deleted += d.df.Count()
	}
	if deleted != 5 {
		t.Errorf("the vectors delete %d rows, want 5 (3, 5, 25, 44, 45)", deleted)
	}
	v3AssertDVRules(t, f)
	if res, _ := f.exec.Run(f.ctx, convJob(f, "a", "b")); res.Outcome != jobs.Noop {
		t.Errorf("second run: %v %v, want noop", res.Outcome, res.Err)
	}
}
