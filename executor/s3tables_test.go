package executor_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/scope"
)

// An S3 Tables table (its location in a bucket named --table-s3, on the
// embedded gateway standing in for a table bucket): compaction and the
// expiry's commit run, rows exact; nothing is deleted, no record or intent
// is written (the bucket could not list or delete them), and orphan
// cleanup is refused with a text that says why.
func TestS3TablesCompactsExpiresAndDeletesNothing(t *testing.T) {
	s := newShared(t, "s3tables", nil)
	before := len(s.load(s.a).Metadata().Snapshots())
	replaced, res := s.compactAndExpire("0s")
	after := s.load(s.a)
	if n := len(after.Metadata().Snapshots()); n >= before {
		t.Errorf("%d snapshots after the expiry, %d before: it did not commit", n, before)
	}
	if got := len(s.liveDataFiles(s.a)); got != 1 {
		t.Errorf("%d live data files after the compaction, want 1", got)
	}
	if len(res.PendingDeletes) != 0 {
		t.Errorf("pending deletions %v written for an S3 Tables table", res.PendingDeletes)
	}
	for _, p := range replaced {
		if !s.exists(p) {
			t.Errorf("%s deleted on an S3 Tables table", p)
		}
	}
	if left := s.recordsLeft(); len(left) != 0 {
		t.Errorf("records %v written to a table bucket", left)
	}
	if rows := s.contents(s.a).Total.Rows; rows != 60 {
		t.Errorf("A has %d rows, want 60", rows)
	}
	s.logged("expiry committed; the table is an S3 Tables table, so the files it unlinked are left to S3's unreferenced file removal")
	if n := testutil.ToFloat64(s.met.DeletionsRefused.WithLabelValues("db.a", string(scope.S3TablesRule))); n < float64(len(replaced)) {
		t.Errorf("reactor_deletions_refused_total{rule=s3_tables} = %v, want at least the %d replaced files", n, len(replaced))
	}

	stray := strings.TrimRight(after.Location(), "/") + "/data/category=a/stray.parquet"
	s.put(stray, []byte("a failed write's leftover"))
	j := s.job(jobkind.RemoveOrphans, "defaults: {orphan_margin: 1ms, orphan_margin_floor: 1ms, orphan_delete: true}")
	j.OrphanSource = jobs.OrphansFromListing
	res, rep := s.exec.Run(t.Context(), j)
	const want = "orphan cleanup refused: S3 Tables removes unreferenced files itself (configure it with put-table-bucket-maintenance-configuration): deletion refused (s3_tables): " +
		"s3://0f3a9c1e-5b7d-4e2a-9c41-reactortest--table-s3/warehouse/db.db/a lies in the S3 table bucket 0f3a9c1e-5b7d-4e2a-9c41-reactortest--table-s3: " +
		"Amazon S3 Tables maintains the table (unreferenced file removal) and its store supports neither listing nor deleting objects"
	if res.Outcome != jobs.Failed || res.Err == nil || res.Err.Error() != want {
		t.Errorf("orphan cleanup: %v %v\nwant failed with %q", res.Outcome, res.Err, want)
	}
	if rep.Refusals.ByRule[scope.S3TablesRule] != 1 || rep.Orphans.DeletedFiles != 0 {
		t.Errorf("orphan cleanup report: %+v %+v", rep.Refusals, rep.Orphans)
	}
	if !s.exists(stray) {
		t.Errorf("orphan cleanup deleted %s", stray)
	}
}
