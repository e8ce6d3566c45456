package executor_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/planner"
)

func fileExists(t *testing.T, loc string) bool {
	t.Helper()
	_, err := os.Stat(strings.TrimPrefix(loc, "file://"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func (f *fixture) expireJob(yaml string, olderThan time.Duration) planner.Job {
	j := f.job(yaml)
	j.Kind = planner.KindExpireSnapshots
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
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != planner.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	rows := f.contents().Total
	time.Sleep(5 * time.Millisecond) // every snapshot is now older than the 1ms horizon

	res, rep := f.exec.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1}", time.Millisecond))
	if res.Outcome != planner.Succeeded {
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

// A reader holding a snapshot while expiry runs: with min_reader_margin
// longer than the read, nothing it needs is removed however short the
// retention (the seed 000 incident made impossible by config). With no
// margin, the same read fails: the test can tell.
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
			if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != planner.Succeeded {
				t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
			}
			time.Sleep(5 * time.Millisecond)
			res, _ := f.exec.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: "+tc.margin+"}", time.Millisecond))
			if tc.readerSafe && res.Outcome != planner.Noop {
				t.Fatalf("expiry within the reader margin: %v %v, want noop", res.Outcome, res.Err)
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

// The executor's own check: a staged expiry that would drop a snapshot
// younger than the margin or a ref head is refused.
func TestRemovedSnapshotsGuard(t *testing.T) {
	f := newFixture(t, nil)
	for range 3 {
		f.commit("a", 10)
	}
	before := f.load()
	txn := before.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := executor.RemovedSnapshots(before.Metadata(), staged.Metadata(), time.Now().Add(-time.Hour)); !errors.Is(err, executor.ErrReaderMarginViolated) {
		t.Errorf("err = %v, want ErrReaderMarginViolated", err)
	}
	removed, err := executor.RemovedSnapshots(before.Metadata(), staged.Metadata(), time.Now().Add(time.Hour))
	if err != nil || len(removed) != 2 {
		t.Errorf("removed %d, err %v; want 2", len(removed), err)
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

// With expire_deletion_delay, expiry commits but deletes nothing; it hands
// the now-unreachable files to a later pass, which checks each again (a
// file referenced again is kept) before deleting.
func TestDeferredExpiryDeletion(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	old := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != planner.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	time.Sleep(5 * time.Millisecond)
	yaml := "defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1, expire_deletion_delay: 1h}"
	res, rep := f.exec.Run(f.ctx, f.expireJob(yaml, time.Millisecond))
	if res.Outcome != planner.Succeeded || rep.Expiry.DeletedDataFiles != 6 {
		t.Fatalf("expiry: %v %v %+v", res.Outcome, res.Err, rep.Expiry)
	}
	for loc := range old {
		if !fileExists(t, loc) {
			t.Fatalf("deferred expiry deleted %s at once", loc)
		}
		if !slices.Contains(res.DeferredDeletes, loc) {
			t.Errorf("%s missing from the deferred list", loc)
		}
	}
	// The later pass, with one live file slipped into its list.
	var live string
	for loc := range f.dataFiles("a") {
		live = loc
	}
	j := f.job(yaml)
	j.Kind = planner.KindDeleteExpiredFiles
	j.Files = append(slices.Clone(res.DeferredDeletes), live)
	res2, rep2 := f.exec.Run(f.ctx, j)
	if res2.Outcome != planner.Succeeded || rep2.Orphans.StillReferenced != 1 || rep2.Orphans.DeletedFiles != len(res.DeferredDeletes) {
		t.Fatalf("later pass: %v %v %+v", res2.Outcome, res2.Err, rep2.Orphans)
	}
	for loc := range old {
		if fileExists(t, loc) {
			t.Errorf("%s survived the later pass", loc)
		}
	}
	if !fileExists(t, live) {
		t.Errorf("the later pass deleted a live file")
	}
	if got := f.contents().Total; got != f.writer.Written() {
		t.Errorf("rows %v, written %v", got, f.writer.Written())
	}
}

// A file expiry would delete is already gone: iceberg-go's post-commit
// deletion fails, but the expiry did commit and must be reported as such.
func TestExpiryCommittedDespiteDeletionFailure(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	old := f.dataFiles("a")
	if res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != planner.Succeeded {
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
	if res.Outcome != planner.Succeeded || rep.Commits != 1 || rep.Expiry.ExpiredSnapshots == 0 {
		t.Fatalf("outcome %v (err %v), report %+v: the expiry committed", res.Outcome, res.Err, rep.Expiry)
	}
	if n := len(f.load().Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots left, want 1", n)
	}
}
