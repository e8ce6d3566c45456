package executor_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/scope"
)

// The four ways a hostile writer of table A made reactor delete table B's
// files and a file outside the warehouse (issue 33), each end to end on a
// local warehouse and on the S3 gateway. Every scenario also runs A's own
// legitimate deletions in the same pass (the control): they still happen.

// 1. A pending-deletion batch dropped into A's record directory, listing
// B's files, B's current metadata and the outside file, due long ago.
func TestForgedPendingBatchDeletesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *shared) {
		replaced, _ := s.compactAndExpire("1ms")
		time.Sleep(5 * time.Millisecond) // A's own batch is due
		b := s.load(s.b)
		var victims []deletions.File
		for _, df := range s.liveDataFiles(s.b) {
			victims = append(victims, deletions.File{Path: df.FilePath(), Kind: history.Data})
		}
		victims = append(victims, deletions.File{Path: b.MetadataLocation(), Kind: history.Data},
			deletions.File{Path: s.outside, Kind: history.Data})
		forged := deletions.Batch{Table: "db.a", JobID: "forged", Due: time.Now().Add(-24 * time.Hour), Files: victims}
		plain, _ := json.Marshal(forged)
		dir := deletions.Dir(s.load(s.a).Location())
		s.put(dir+"/0000000000001-forged.json", plain)
		// The same, signed with a key that is not reactor's.
		if _, err := deletions.EphemeralKeyring().Records(s.fs(), deletions.RefOf(s.load(s.a))).WriteBatch(
			deletions.Batch{Table: "db.a", JobID: "forged-key", Due: forged.Due, Files: victims}); err != nil {
			t.Fatal(err)
		}
		bFiles, bRows, aRows := s.files(s.b), s.contents(s.b), s.contents(s.a)

		res, rep := s.pass()
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("pass: %v %v", res.Outcome, res.Err)
		}
		s.untouched(bFiles, bRows)
		s.gone("A's own unlinked files", replaced)
		if got := s.contents(s.a); got.Total != aRows.Total {
			t.Errorf("A reads %+v, want %+v", got.Total, aRows.Total)
		}
		if r := rep.Refusals.Records; r[deletions.RefusedUnsigned] != 1 || r[deletions.RefusedUnknownKey] != 1 {
			t.Errorf("records refused %v; want the unsigned and the foreign-key batch", r)
		}
		if n := testutil.ToFloat64(s.met.RecordsRefused.WithLabelValues("db.a", deletions.RefusedUnsigned)); n != 1 {
			t.Errorf("reactor_records_refused_total{reason=unsigned} %v, want 1", n)
		}
		left := s.recordsLeft()
		if len(left) != 2 || !slices.Contains(left, "0000000000001-forged.json") {
			t.Errorf("records left %v; want exactly the two forged ones, for an operator", left)
		}
		s.logged("reactor record refused")
		// A second pass does not count or log them again.
		s.pass()
		if n := testutil.ToFloat64(s.met.RecordsRefused.WithLabelValues("db.a", deletions.RefusedUnsigned)); n != 1 {
			t.Errorf("after a second pass: %v refusals counted, want still 1", n)
		}
	})
}

// 2. An expiry intent naming B's metadata file as the metadata the expiry
// started from: "recovering" it counted every file of B as unlinked from A.
func TestForgedExpiryIntentDeletesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *shared) {
		replaced, _ := s.compactAndExpire("1ms")
		time.Sleep(5 * time.Millisecond)
		b := s.load(s.b)
		dir := deletions.Dir(s.load(s.a).Location())
		plain, _ := json.Marshal(deletions.Intent{Table: "db.a", JobID: "forged", BaseMetadata: b.MetadataLocation()})
		s.put(dir+"/intent-forged.json", plain)
		// A genuine intent of A's whose base metadata a writer then
		// replaced with B's: reactor's own record, about another table.
		if _, err := records(t, s.fs(), s.load(s.a)).WriteIntent(deletions.Intent{Table: "db.a", JobID: "swapped",
			BaseMetadata: b.MetadataLocation(), Roots: []string{s.load(s.a).Location()}}); err != nil {
			t.Fatal(err)
		}
		bFiles, bRows := s.files(s.b), s.contents(s.b)

		res, rep := s.pass()
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("pass: %v %v", res.Outcome, res.Err)
		}
		s.untouched(bFiles, bRows)
		s.gone("A's own unlinked files", replaced)
		if r := rep.Refusals.Records; r[deletions.RefusedUnsigned] != 1 || r[deletions.RefusedOtherTable] != 1 {
			t.Errorf("records refused %v; want the unsigned intent and the one about B's metadata", r)
		}
		if len(res.PendingDeletes) != 0 {
			t.Errorf("the pass rebuilt %v from a refused intent", res.PendingDeletes)
		}
	})
}

// 3. A's write.data.path pointed at B's data directory, and an output
// intent planning one of B's files: the next owner's recovery deleted it.
// A killed job's genuine intent, written before the change, still gets its
// outputs deleted (the control).
func TestDataPathPointedAtAnotherTableDeletesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *shared) {
		ctx := t.Context()
		live := map[string]bool{}
		for p := range s.files(s.a) {
			live[p] = true
		}
		killed := newTestExecutor(t, s.cat, slog.New(slog.DiscardHandler), s.met)
		executor.GuardCommits(killed, leased{})
		executor.CrashAt(killed, "before-commit")
		if res, _ := killed.Run(ctx, s.job(jobkind.Compact, "defaults: {target_file_size: 1MiB, small_file_count: 5}")); res.Outcome != jobs.Failed {
			t.Fatalf("killed job: %v %v, want failed", res.Outcome, res.Err)
		}
		var outputs []string
		for p := range s.files(s.a) {
			if !live[p] && !isRecord(p) {
				outputs = append(outputs, p)
			}
		}
		if len(outputs) == 0 {
			t.Fatal("the killed job left no output")
		}
		// The hostile writer moves A's data path into B's data.
		bData := s.load(s.b).Location() + "/data"
		txn := s.load(s.a).NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{table.WriteDataPathKey: bData}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		victim := s.liveDataFiles(s.b)[0].FilePath()
		plain, _ := json.Marshal(deletions.OutputIntent{Table: "db.a", JobID: "forged", Leased: true, Token: uuid.NewString(),
			Dirs: []string{bData}, Planned: []string{victim}})
		s.put(deletions.Dir(s.load(s.a).Location())+"/outputs-forged.json", plain)
		// Signed, as if reactor had recorded the new data path itself.
		if _, err := records(t, s.fs(), s.load(s.a)).WriteOutputIntent(deletions.OutputIntent{Table: "db.a", JobID: "signed",
			Leased: true, Token: uuid.NewString(), Dirs: []string{bData}, Planned: []string{victim}}); err != nil {
			t.Fatal(err)
		}
		bFiles, bRows := s.files(s.b), s.contents(s.b)

		rec, err := s.exec.RecoverOutputs(ctx, s.a)
		if err != nil {
			t.Fatal(err)
		}
		s.untouched(bFiles, bRows)
		s.gone("the killed job's outputs", outputs)
		if rec.Deleted != len(outputs) {
			t.Errorf("recovery %+v; want the killed job's %d outputs deleted", rec, len(outputs))
		}
		if rec.Refusals.Records[deletions.RefusedUnsigned] != 1 || rec.Refusals.ByRule[scope.OutsideTable] == 0 {
			t.Errorf("refusals %+v; want the unsigned intent refused and B's file refused as outside A", rec.Refusals)
		}
		if n := testutil.ToFloat64(s.met.DeletionsRefused.WithLabelValues("db.a", string(scope.OutsideTable))); n == 0 {
			t.Error("reactor_deletions_refused_total{rule=outside_table} not counted")
		}
		s.logged("deletion refused")
	})
}

// 4. A's writer adds one of B's data files, and a file from outside the
// warehouse, to A, then replaces them: A's expiry unlinks them and its
// deletion pass deleted them. Iceberg Java does the same (and leaves it to
// gc.enabled); reactor refuses, since they are not A's.
func TestFilesAddedFromElsewhereAreNotDeleted(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *shared) {
		ctx := t.Context()
		bFile := s.liveDataFiles(s.b)[0].FilePath()
		// The outside file is a copy of a real data file, so it can be added.
		data := readAll(t, s.fs(), s.liveDataFiles(s.a)[0].FilePath())
		s.put(s.outside, data)
		txn := s.load(s.a).NewTransaction()
		if err := txn.AddFiles(ctx, []string{bFile, s.outside}, nil, false); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		txn = s.load(s.a).NewTransaction()
		rw := txn.NewRewrite(nil)
		for _, df := range s.liveDataFiles(s.a) {
			if df.FilePath() == bFile || df.FilePath() == s.outside {
				rw.DeleteFile(df)
			}
		}
		if err := rw.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		bFiles, bRows := s.files(s.b), s.contents(s.b)
		replaced, _ := s.compactAndExpire("1ms")
		time.Sleep(5 * time.Millisecond)

		res, rep := s.pass()
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("pass: %v %v", res.Outcome, res.Err)
		}
		s.untouched(bFiles, bRows)
		var own []string
		for _, p := range replaced {
			if p != bFile && p != s.outside {
				own = append(own, p)
			}
		}
		s.gone("A's own unlinked files", own)
		if r := rep.Refusals.ByRule; r[scope.OutsideTable] < 2 {
			// B's file lies outside A's roots as much as the outside file
			// does: neither is under A's location or data path.
			t.Errorf("refused %v; want B's file and the outside file refused", r)
		}
	})
}

// isRecord reports whether p is one of reactor's records.
func isRecord(p string) bool { return strings.Contains(p, "/_reactor/") }

// readAll reads a whole file through fs.
func readAll(t *testing.T, fs iceio.IO, loc string) []byte {
	t.Helper()
	f, err := fs.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
