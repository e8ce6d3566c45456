package sparkrun

import (
	"slices"
	"testing"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobs"
)

// TestSparkSnapshotsAreRecorded: the snapshots Spark committed for a job
// are written to the table's storage, where a restarted planner finds
// them (planner's offloaded.go).
func TestSparkSnapshotsAreRecorded(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, rules: [{}]}")
	res, _, _, _ := f.run()
	if res.Outcome != jobs.Succeeded || len(res.OwnSnapshots) == 0 {
		t.Fatalf("outcome %s, own snapshots %v: %v", res.Outcome, res.OwnSnapshots, res.Err)
	}
	tbl, err := f.cat.LoadTable(t.Context(), testIdent)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	recs := f.runner.keys.Records(fs, deletions.RefOf(tbl))
	refs, err := recs.ListOwnSnapshots()
	if err != nil || len(refs) != 1 {
		t.Fatalf("records %v, %v; want one", refs, err)
	}
	rec, err := recs.ReadOwnSnapshots(refs[0])
	if err != nil {
		t.Fatal(err)
	}
	if rec.JobID != f.job.ID || !slices.Equal(rec.SnapshotIDs, res.OwnSnapshots) || rec.Sort {
		t.Errorf("record %+v; want job %s, snapshots %v, not a sort", rec, f.job.ID, res.OwnSnapshots)
	}
}
