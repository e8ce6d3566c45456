package executor_test

import (
	"maps"
	"testing"

	"github.com/icereactor/reactor/planner"
)

// Two deletion vectors for one data file (a writer that did not merge with
// the existing one) are merged into one holding both; the rows and their
// lineage read as before, and a second run plans nothing.
func TestV3PositionDeleteRewriteMergesDuplicateDVs(t *testing.T) {
	f := newFixture(t, v3Props())
	f.commit("a", 20) // ids 1..20
	f.commit("a", 20) // ids 21..40
	pdmDelete(t, f, 3, 25)
	loc := pdmLocate(t, f, 5, 6)
	before, lineage := v3Without(f.contents(), "a", 5, 6), v3LineageWithout(v3RowLineage(t, f), 5, 6)
	v3CommitDeletes(t, f, v3WriteDV(t, f, "a", loc[5].Path, loc[5].Pos, loc[6].Pos))
	dvs := v3DVs(t, f)
	if len(dvs) != 3 {
		t.Fatalf("%d deletion vectors, want 3 (two for one data file)", len(dvs))
	}

	nextRowID := f.load().Metadata().NextRowID()
	res, rep := f.exec.Run(f.ctx, pdmJob(f, "", "a"))
	if res.Outcome != planner.Succeeded {
		t.Fatalf("rewrite: %v %v", res.Outcome, res.Err)
	}
	if rep.RewrittenDeleteFiles != 2 || rep.AddedDeleteFiles != 1 {
		t.Errorf("report: %d delete files rewritten, %d added; want the two vectors of one file merged into one",
			rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
	}
	v3AssertLineageSnapshot(t, f, nextRowID)
	after := v3DVs(t, f)
	if len(after) != 2 {
		t.Fatalf("%d deletion vectors after the merge, want 2 (one per data file)", len(after))
	}
	for _, d := range after {
		if d.ref == loc[5].Path && (d.df.Count() != 3 || d.seq != dvSeqMax(dvs, d.ref)) {
			t.Errorf("merged vector: %d rows at sequence number %d, want 3 at %d", d.df.Count(), d.seq, dvSeqMax(dvs, d.ref))
		}
	}
	sameContents(t, "after merge", before, f.contents())
	if got := v3RowLineage(t, f); !maps.Equal(got, lineage) {
		t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
	}
	v3AssertDVRules(t, f)
	if res, _ := f.exec.Run(f.ctx, pdmJob(f, "", "a")); res.Outcome != planner.Noop {
		t.Errorf("second run: %v %v, want noop", res.Outcome, res.Err)
	}
}
