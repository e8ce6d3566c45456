package executor_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
)

func fileExists(t *testing.T, loc string) bool {
	t.Helper()
	_, err := os.Stat(strings.TrimPrefix(loc, "file://"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func (f *fixture) expireJob(yaml string, olderThan time.Duration) jobs.Job {
	j := f.job(yaml)
	j.Kind = jobkind.ExpireSnapshots
	j.ExpireOlderThan = olderThan
	return j
}

// After a compaction, expiry removes the snapshots past retention and the
// files only they referenced, and keeps a tagged snapshot and everything it
// references. Rows are unchanged; the report counts what went.
func TestExpiryDeletesOnlyUnreachableFiles(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	tbl := f.load()
	var history []int64
	for _, s := range tbl.Metadata().Snapshots() {
		history = append(history, s.SnapshotID)
	}
	tagged := history[1] // holds the first two data files
	if _, _, err := f.cat.CommitTable(f.ctx, ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("keep", tagged, table.TagRef, 0, 0, 0),
	}); err != nil {
		t.Fatal(err)
	}
	before := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	rows := f.contents().Total
	time.Sleep(5 * time.Millisecond) // every snapshot is now older than the 1ms horizon

	res, rep := f.exec.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1}", time.Millisecond))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("expiry: %v %v", res.Outcome, res.Err)
	}
	after := f.load()
	var remaining []int64
	for _, s := range after.Metadata().Snapshots() {
		remaining = append(remaining, s.SnapshotID)
	}
	if len(remaining) != 2 || !contains(remaining, tagged) || !contains(remaining, after.CurrentSnapshot().SnapshotID) {
		t.Errorf("remaining snapshots %v, want the current one and the tagged %d", remaining, tagged)
	}
	// The tagged snapshot's two files stay; the other four old files go.
	kept, gone := 0, 0
	for loc := range before {
		if fileExists(t, loc) {
			kept++
		} else {
			gone++
		}
	}
	if kept != 2 || gone != 4 {
		t.Errorf("old data files: %d kept, %d deleted; want 2 and 4", kept, gone)
	}
	for loc := range f.dataFiles("a") {
		if !fileExists(t, loc) {
			t.Errorf("live file %s was deleted", loc)
		}
	}
	x := rep.Expiry
	if x.ExpiredSnapshots != len(history)+1-2 || x.DeletedDataFiles != 4 || x.DeletedManifestLists != x.ExpiredSnapshots || x.DeletedManifests == 0 {
		t.Errorf("report %+v: want %d snapshots, 4 data files, one manifest list each", x, len(history)+1-2)
	}
	if got := f.contents().Total; got != rows {
		t.Errorf("rows %v after expiry, %v before", got, rows)
	}
}

// A reader holding a snapshot while expiry runs: however short the
// retention, the expiry commits (the metadata stays bounded) but the files
// it unlinks wait for min_reader_margin, so the slow reader reads every row
// (docs/design.md#seed-reader-incident made impossible). With no margin the same read
// fails: the test can tell.
func TestExpiryRespectsReaderMargin(t *testing.T) {
	for _, tc := range []struct {
		margin     string
		readerSafe bool
	}{{"1h", true}, {"0s", false}} {
		t.Run("min_reader_margin="+tc.margin, func(t *testing.T) {
			f := newFixture(t, nil)
			for range 6 {
				f.commit("a", 10)
			}
			// The reader plans its scan, then is slow.
			reading := f.load()
			tasks, err := reading.Scan().PlanFiles(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Meanwhile the partition is compacted and expiry runs with a
			// 1 ms retention.
			if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
				t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
			}
			time.Sleep(5 * time.Millisecond)
			res, rep := f.exec.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: "+tc.margin+"}", time.Millisecond))
			if res.Outcome != jobs.Succeeded || rep.Expiry.ExpiredSnapshots == 0 {
				t.Fatalf("expiry: %v %v %+v, want it committed", res.Outcome, res.Err, rep.Expiry)
			}
			if n := len(f.load().Metadata().Snapshots()); n != 1 {
				t.Errorf("%d snapshots after expiry, want 1", n)
			}
			if tc.readerSafe && (len(res.PendingDeletes) != 1 || !rep.Expiry.Deferred) {
				t.Errorf("pending deletes %v, report %+v: want one deferred batch", res.PendingDeletes, rep.Expiry)
			}
			_, records, err := reading.Scan().ReadTasks(f.ctx, tasks)
			n := int64(0)
			if err == nil {
				for rec, rerr := range records {
					if rerr != nil {
						err = rerr
						break
					}
					n += rec.NumRows()
					rec.Release()
				}
			}
			if tc.readerSafe && (err != nil || n != 60) {
				t.Errorf("reader: %d rows, err %v; want all 60", n, err)
			}
			if !tc.readerSafe && err == nil {
				t.Errorf("with no margin the reader's files should be gone, but it read %d rows", n)
			}
		})
	}
}

// The executor's own check: a staged expiry that would drop a ref head is
// refused.
func TestRemovedSnapshotsGuard(t *testing.T) {
	f := newFixture(t, nil)
	for range 3 {
		f.commit("a", 10)
	}
	before := f.load()
	first := before.Metadata().Snapshots()[0].SnapshotID
	if _, _, err := f.cat.CommitTable(f.ctx, ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("keep", first, table.TagRef, 0, 0, 0),
	}); err != nil {
		t.Fatal(err)
	}
	before = f.load()
	b, err := table.MetadataBuilderFromBase(before.Metadata(), before.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveSnapshots([]int64{first}, false); err != nil {
		t.Fatal(err)
	}
	dropsTag, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := executor.RemovedSnapshots(before.Metadata(), dropsTag); !errors.Is(err, executor.ErrReaderMarginViolated) {
		t.Errorf("err = %v, want ErrReaderMarginViolated", err)
	}
	txn := before.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		t.Fatal(err)
	}
	removed, err := executor.RemovedSnapshots(before.Metadata(), staged.Metadata())
	if err != nil || len(removed) != 1 {
		t.Errorf("removed %d, err %v; want 1 (the tag and the current snapshot stay)", len(removed), err)
	}
}

func contains(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// With a reader margin, expiry commits but deletes nothing: it writes the
// unlinked files to the table's pending-deletion list. A pass before the
// due time deletes nothing; once due, the pass checks each file again (a
// file referenced again is kept) before deleting it, and removes the list.
func TestDeferredExpiryDeletion(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	old := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	time.Sleep(5 * time.Millisecond)
	yaml := "defaults: {snapshot_max_age: 1ms, min_reader_margin: 1h, retain_last: 1}"
	res, rep := f.exec.Run(f.ctx, f.expireJob(yaml, time.Millisecond))
	if res.Outcome != jobs.Succeeded || rep.Expiry.DeletedDataFiles != 6 || !rep.Expiry.Deferred || len(res.PendingDeletes) != 1 {
		t.Fatalf("expiry: %v %v %+v %v", res.Outcome, res.Err, rep.Expiry, res.PendingDeletes)
	}
	if counts := rep.CountMap(jobkind.ExpireSnapshots); counts["deleted_data_files_count"] != 0 || counts["deletion_deferred_files_count"] != int64(rep.Expiry.Files()) {
		t.Errorf("expire counts %v: nothing deleted yet, every unlinked file deferred", counts)
	}
	ref := res.PendingDeletes[0]
	if d := time.Until(ref.Due); d < 59*time.Minute || d > time.Hour {
		t.Errorf("due in %s, want the 1h margin", d)
	}
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := records(t, fs, tbl).ReadBatch(ref)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, file := range batch.Files {
		listed[file.Path] = true
	}
	for loc := range old {
		if !fileExists(t, loc) {
			t.Fatalf("expiry deleted %s at once", loc)
		}
		if !listed[loc] {
			t.Errorf("%s missing from the pending list", loc)
		}
	}
	pass := func(refs ...deletions.Ref) (jobs.Result, executor.Report) {
		j := f.job(yaml)
		j.Kind = jobkind.DeleteExpiredFiles
		j.PendingDeletes = refs
		return f.exec.Run(f.ctx, j)
	}
	// Early: nothing goes, whatever the job says.
	if res2, _ := pass(ref); res2.Outcome != jobs.Succeeded || len(res2.PendingDeletes) != 1 {
		t.Fatalf("early pass: %v %v, left %v", res2.Outcome, res2.Err, res2.PendingDeletes)
	}
	for loc := range old {
		if !fileExists(t, loc) {
			t.Fatalf("a pass before the due time deleted %s", loc)
		}
	}
	// Due, with one live file slipped into the list.
	var live string
	for loc := range f.dataFiles("a") {
		live = loc
	}
	batch.Files = append(batch.Files, deletions.File{Path: live, Kind: history.Data})
	batch.Due = time.Now().Add(-time.Second)
	dueRefs, err := records(t, fs, tbl).WriteBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	dueRef := dueRefs[0]
	if err := records(t, fs, tbl).Remove(ref); err != nil {
		t.Fatal(err)
	}
	res2, rep2 := pass(dueRef)
	if res2.Outcome != jobs.Succeeded || rep2.Orphans.StillReferenced != 1 || rep2.Expiry.Files() != len(batch.Files)-1 ||
		rep2.Expiry.DeletedDataFiles != 6 || len(res2.PendingDeletes) != 0 {
		t.Fatalf("due pass: %v %v %+v %+v", res2.Outcome, res2.Err, rep2.Expiry, rep2.Orphans)
	}
	for loc := range old {
		if fileExists(t, loc) {
			t.Errorf("%s survived the pass", loc)
		}
	}
	if !fileExists(t, live) {
		t.Errorf("the pass deleted a live file")
	}
	if refs, err := deletions.List(fs, tbl.Location()); err != nil || len(refs) != 0 {
		t.Errorf("pending lists after the pass: %v (err %v), want none", refs, err)
	}
	if got := f.contents().Total; got != f.writer.Written() {
		t.Errorf("rows %v, written %v", got, f.writer.Written())
	}
}

// Expiries used to log "deleting some unreachable files failed ... no
// such file or directory". iceberg-go's post-commit deletion deletes every
// file a removed snapshot's manifests name, DELETED entries included, so
// when a later expiry removes the compaction's snapshot it deletes, again,
// the inputs an earlier expiry had already deleted. reactor never uses that
// deletion: only live entries are unlinked, each file once.
func TestSecondExpiryDoesNotDeleteAgain(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	old := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	f.commit("a", 10) // the compaction's snapshot is no longer the newest
	time.Sleep(5 * time.Millisecond)
	yaml := "defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s}"
	// First expiry keeps the newest two: the compaction's snapshot stays,
	// its inputs (live only in older snapshots) are deleted.
	j := f.expireJob(yaml, time.Millisecond)
	j.ExpireRetainLast = 2
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != jobs.Succeeded || rep.Expiry.DeletedDataFiles != len(old) {
		t.Fatalf("first expiry: %v %v %+v, want the %d inputs deleted", res.Outcome, res.Err, rep.Expiry, len(old))
	}
	// Second expiry removes the compaction's snapshot, whose manifest
	// still names the inputs as DELETED entries.
	res, rep = f.exec.Run(f.ctx, f.expireJob(yaml, time.Millisecond))
	if res.Outcome != jobs.Succeeded || rep.Expiry.ExpiredSnapshots != 1 {
		t.Fatalf("second expiry: %v %v %+v", res.Outcome, res.Err, rep.Expiry)
	}
	if rep.Expiry.DeletedDataFiles != 0 {
		t.Errorf("second expiry deleted %d data files; the inputs were already gone and the rest are live", rep.Expiry.DeletedDataFiles)
	}
	if got := f.contents().Total; got != f.writer.Written() {
		t.Errorf("rows %v, written %v", got, f.writer.Written())
	}
}

// A file expiry would delete is already gone (deleted outside reactor):
// the expiry committed and is reported as such, and the file is counted as
// gone, not as a failure.
func TestExpiryCommittedWhenAFileIsAlreadyGone(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	old := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	for loc := range old {
		if err := os.Remove(strings.TrimPrefix(loc, "file://")); err != nil {
			t.Fatal(err)
		}
		break
	}
	time.Sleep(5 * time.Millisecond)
	res, rep := f.exec.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1}", time.Millisecond))
	if res.Outcome != jobs.Succeeded || rep.Commits != 1 || rep.Expiry.ExpiredSnapshots == 0 {
		t.Fatalf("outcome %v (err %v), report %+v: the expiry committed", res.Outcome, res.Err, rep.Expiry)
	}
	if n := len(f.load().Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots left, want 1", n)
	}
}

// Files waiting out the reader margin are unreferenced, and older than the
// orphan margin when they were written long ago: orphan cleanup must leave
// them to the deletion pass, or it would delete them early.
func TestOrphanCleanupLeavesPendingFiles(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	old := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	time.Sleep(5 * time.Millisecond)
	res, _ := f.exec.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: 1h}", time.Millisecond))
	if res.Outcome != jobs.Succeeded || len(res.PendingDeletes) != 1 {
		t.Fatalf("expiry: %v %v %v", res.Outcome, res.Err, res.PendingDeletes)
	}
	long := time.Now().Add(-96 * time.Hour)
	for loc := range old {
		if err := os.Chtimes(strings.TrimPrefix(loc, "file://"), long, long); err != nil {
			t.Fatal(err)
		}
	}
	j := f.job("defaults: {orphan_delete: true}")
	j.Kind, j.OrphanSource = jobkind.RemoveOrphans, jobs.OrphansFromListing
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome == jobs.Failed {
		t.Fatalf("orphan cleanup: %v", res.Err)
	}
	for _, o := range rep.Orphans.Orphans {
		_, a := old[o.Location]
		_, b := old["file://"+o.Location]
		if a || b {
			t.Errorf("orphan cleanup reported a pending file: %s", o.Location)
		}
	}
	for loc := range old {
		if !fileExists(t, loc) {
			t.Errorf("orphan cleanup deleted %s, which waits for the reader margin", loc)
		}
	}
}

// A crash between an expiry's commit and its pending list: the intent it
// wrote before committing lets the next deletion pass rebuild the list from
// the metadata the expiry started on (due a whole margin later); an intent
// whose expiry never committed is dropped with nothing unlinked.
func TestInterruptedExpiryIsRecoveredFromItsIntent(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	old := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	base := f.load()
	fs, err := base.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// An intent whose expiry never committed, and one whose did.
	never, err := records(t, fs, base).WriteIntent(deletions.Intent{Table: "db.t", JobID: "never", BaseMetadata: base.MetadataLocation()})
	if err != nil {
		t.Fatal(err)
	}
	pass := func(refs ...deletions.Ref) jobs.Result {
		j := f.job("defaults: {min_reader_margin: 1h}")
		j.Kind, j.PendingDeletes = jobkind.DeleteExpiredFiles, refs
		res, _ := f.exec.Run(f.ctx, j)
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("pass: %v %v", res.Outcome, res.Err)
		}
		return res
	}
	if res := pass(never); len(res.PendingDeletes) != 0 {
		t.Errorf("an expiry that never committed left %v", res.PendingDeletes)
	}
	crashed, err := records(t, fs, base).WriteIntent(deletions.Intent{Table: "db.t", JobID: "crashed", BaseMetadata: base.MetadataLocation()})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	txn := base.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(time.Millisecond), table.WithRetainLast(1), table.WithPostCommit(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	res := pass(crashed)
	if len(res.PendingDeletes) != 1 || res.PendingDeletes[0].Intent || time.Until(res.PendingDeletes[0].Due) < 59*time.Minute {
		t.Fatalf("rebuilt %v, want one batch due in about an hour", res.PendingDeletes)
	}
	batch, err := records(t, fs, base).ReadBatch(res.PendingDeletes[0])
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, file := range batch.Files {
		listed[file.Path] = true
	}
	for loc := range old {
		if !listed[loc] || !fileExists(t, loc) {
			t.Errorf("%s: listed %v, exists %v; want listed and kept", loc, listed[loc], fileExists(t, loc))
		}
	}
	refs, err := deletions.List(fs, base.Location())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if r.Intent {
			t.Errorf("intent %s left after recovery", r.Location)
		}
	}
}
