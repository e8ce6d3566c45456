package executor_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// pdmAssertMerged checks what a committed merge left in one partition: the
// sources gone, the outputs live, each output sorted with exact file_path
// bounds and the maximum sequence number of the sources, and together
// holding exactly the rows wantRows.
func pdmAssertMerged(t *testing.T, f *fixture, category string, sources []pdmDeleteFile, wantSeq int64, wantRows []pdmRow) []pdmDeleteFile {
	t.Helper()
	live := pdmOf(pdmDeleteFiles(t, f), category)
	srcPaths := map[string]bool{}
	for _, s := range sources {
		srcPaths[s.path] = true
	}
	var outputs []pdmDeleteFile
	for _, d := range live {
		if srcPaths[d.path] {
			t.Errorf("source %s is still live", d.path)
		}
		if strings.HasSuffix(d.path, "-merged-deletes.parquet") {
			outputs = append(outputs, d)
		}
	}
	if len(outputs) == 0 {
		t.Fatalf("no merged delete file in partition %s: %v", category, pdmPaths(live))
	}
	var got []pdmRow
	for _, out := range outputs {
		if out.seq != wantSeq {
			t.Errorf("merged file %s has data sequence number %d, want %d (max of its sources)", out.path, out.seq, wantSeq)
		}
		rows := pdmRowsOf(t, f, out.path)
		if !slices.IsSortedFunc(rows, pdmCompareRows) {
			t.Errorf("merged file %s is not sorted by (file_path, pos)", out.path)
		}
		if n := out.df.Count(); n != int64(len(rows)) {
			t.Errorf("merged file %s: record count %d, %d rows", out.path, n, len(rows))
		}
		lower, upper := string(out.df.LowerBoundValues()[2147483546]), string(out.df.UpperBoundValues()[2147483546])
		if len(rows) > 0 && (lower != rows[0].Path || upper != rows[len(rows)-1].Path) {
			t.Errorf("merged file %s: file_path bounds [%s, %s], want the full first and last paths", out.path, lower, upper)
		}
		if st, err := os.Stat(strings.TrimPrefix(out.path, "file://")); err != nil || st.Size() != out.size {
			t.Errorf("merged file %s: manifest size %d, on disk %v (%v)", out.path, out.size, st, err)
		}
		got = append(got, rows...)
	}
	slices.SortFunc(got, pdmCompareRows)
	want := slices.Clone(wantRows)
	slices.SortFunc(want, pdmCompareRows)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Errorf("merged rows:\n%v\nwant:\n%v", got, want)
	}
	return outputs
}

// Partition a gets eight position-delete files written at different
// sequence numbers, between appends (so a merged file stamped with a low
// sequence number would stop applying to the newer data files); partition
// b gets its own. Merging a replaces its eight files with one carrying the
// highest sequence number, and changes nothing else.
func TestPositionDeleteRewriteMergesOnePartition(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("b", 10) // ids 1..10
	for range 3 {
		f.commit("a", 10) // ids 11..40
	}
	pdmDelete(t, f, 12)
	pdmDelete(t, f, 23)
	f.commit("a", 10) // 41..50
	pdmDelete(t, f, 45)
	f.commit("a", 10) // 51..60
	pdmDelete(t, f, 52)
	pdmDelete(t, f, 31)
	f.commit("a", 10) // 61..70
	pdmDelete(t, f, 66)
	pdmDelete(t, f, 67, 13)
	pdmDelete(t, f, 3)
	pdmDelete(t, f, 5)
	pdmDelete(t, f, 14, 7) // one file in a, one in b
	deleted := []int64{12, 23, 45, 52, 31, 66, 67, 13, 3, 5, 14, 7}

	all := pdmDeleteFiles(t, f)
	aBefore, bBefore := pdmOf(all, "a"), pdmOf(all, "b")
	if len(aBefore) != 8 || len(bBefore) != 3 {
		t.Fatalf("setup: %d delete files in a, %d in b; want 8 and 3", len(aBefore), len(bBefore))
	}
	var aRows []pdmRow
	for _, d := range aBefore {
		aRows = append(aRows, pdmRowsOf(t, f, d.path)...)
	}
	dataA, dataB := f.dataFiles("a"), f.dataFiles("b")
	if c := f.contents(); c.Total != f.writer.Written() {
		t.Fatalf("setup: table %v, written %v", c.Total, f.writer.Written())
	}

	job := pdmJob(f, "defaults: {delete_min_input_files: 5}", "a")
	res, rep := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}

	c := f.contents()
	if c.Total != f.writer.Written() {
		t.Errorf("table %v after the merge, written %v", c.Total, f.writer.Written())
	}
	for _, id := range deleted {
		if c.IDs[id] != 0 {
			t.Errorf("deleted id %d is visible again", id)
		}
	}
	outputs := pdmAssertMerged(t, f, "a", aBefore, pdmMaxSeq(aBefore), aRows)
	if len(outputs) != 1 {
		t.Errorf("partition a has %d merged files, want 1", len(outputs))
	}
	if got := pdmOf(pdmDeleteFiles(t, f), "a"); len(got) != 1 {
		t.Errorf("partition a has %d delete files, want 1", len(got))
	}
	if got := pdmPaths(pdmOf(pdmDeleteFiles(t, f), "b")); !slices.Equal(got, pdmPaths(bBefore)) {
		t.Errorf("partition b's delete files changed: %v, were %v", got, pdmPaths(bBefore))
	}
	if got := f.dataFiles("a"); len(got) != len(dataA) {
		t.Errorf("partition a's data files changed: %v, were %v", got, dataA)
	}
	for p := range dataA {
		if _, ok := f.dataFiles("a")[p]; !ok {
			t.Errorf("data file %s is gone", p)
		}
	}
	for p := range dataB {
		if _, ok := f.dataFiles("b")[p]; !ok {
			t.Errorf("data file %s is gone", p)
		}
	}

	if rep.RewrittenDeleteFiles != 8 || rep.AddedDeleteFiles != 1 {
		t.Errorf("rewritten %d, added %d delete files; want 8 and 1", rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
	}
	if rep.RewrittenDeleteBytes != pdmTotalSize(aBefore) {
		t.Errorf("rewritten bytes %d, sources hold %d", rep.RewrittenDeleteBytes, pdmTotalSize(aBefore))
	}
	if len(outputs) == 1 && rep.AddedDeleteBytes != outputs[0].size {
		t.Errorf("added bytes %d, the merged file has %d", rep.AddedDeleteBytes, outputs[0].size)
	}
	if rep.DanglingDeleteRows != 0 || rep.Commits != 1 || rep.Attempts != 1 || rep.Conflicts != 0 {
		t.Errorf("dangling %d commits %d attempts %d conflicts %d; want 0 1 1 0",
			rep.DanglingDeleteRows, rep.Commits, rep.Attempts, rep.Conflicts)
	}
	tbl := f.load()
	snap := tbl.CurrentSnapshot()
	if rep.CommittedSnapshotID != snap.SnapshotID || res.Table == nil || res.Table.CurrentSnapshot().SnapshotID != snap.SnapshotID {
		t.Errorf("committed snapshot %d, table is at %d", rep.CommittedSnapshotID, snap.SnapshotID)
	}
	if snap.Summary.Properties[jobs.SnapshotJobProperty] != job.ID || snap.Summary.Operation != "replace" {
		t.Errorf("snapshot summary %v %v: want operation replace and the job id", snap.Summary.Operation, snap.Summary.Properties)
	}
	if n := rep.CountMap(jobkind.RewritePositionDeletes)["rewritten_delete_files_count"]; n != 8 {
		t.Errorf("rewritten_delete_files_count = %d", n)
	}
}

// One job, two partitions: one snapshot, and each partition's merged file
// gets the highest sequence number of ITS sources, not of the whole job's.
func TestPositionDeleteRewriteTwoPartitionsOneCommit(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 5 {
		f.commit("a", 10) // ids 1..50
	}
	for range 5 {
		f.commit("b", 10) // ids 51..100
	}
	for i := range int64(5) {
		pdmDelete(t, f, 1+10*i)
	}
	for i := range int64(5) {
		pdmDelete(t, f, 52+10*i)
	}
	before := pdmDeleteFiles(t, f)
	aBefore, bBefore := pdmOf(before, "a"), pdmOf(before, "b")
	if len(aBefore) != 5 || len(bBefore) != 5 || pdmMaxSeq(aBefore) >= pdmMaxSeq(bBefore) {
		t.Fatalf("setup: %d and %d delete files, max seqs %d and %d", len(aBefore), len(bBefore), pdmMaxSeq(aBefore), pdmMaxSeq(bBefore))
	}
	var aRows, bRows []pdmRow
	for _, d := range aBefore {
		aRows = append(aRows, pdmRowsOf(t, f, d.path)...)
	}
	for _, d := range bBefore {
		bRows = append(bRows, pdmRowsOf(t, f, d.path)...)
	}
	snapBefore := f.load().CurrentSnapshot()

	res, rep := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a", "b"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if c := f.contents(); c.Total != f.writer.Written() {
		t.Errorf("table %v, written %v", c.Total, f.writer.Written())
	}
	pdmAssertMerged(t, f, "a", aBefore, pdmMaxSeq(aBefore), aRows)
	pdmAssertMerged(t, f, "b", bBefore, pdmMaxSeq(bBefore), bRows)
	snap := f.load().CurrentSnapshot()
	if rep.Commits != 1 || snap.ParentSnapshotID == nil || *snap.ParentSnapshotID != snapBefore.SnapshotID {
		t.Errorf("%d commits; the job must commit exactly one snapshot on top of %d", rep.Commits, snapBefore.SnapshotID)
	}
	if rep.RewrittenDeleteFiles != 10 || rep.AddedDeleteFiles != 2 {
		t.Errorf("rewritten %d, added %d; want 10 and 2", rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
	}
}

// The merged rows roll over to a new file when the estimated size reaches
// the delete target size.
func TestPositionDeleteRewriteRollsAtTargetSize(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10) // ids 1..60
	}
	for i := range int64(6) {
		pdmDelete(t, f, 1+10*i, 3+10*i, 5+10*i, 7+10*i, 9+10*i)
	}
	sources := pdmOf(pdmDeleteFiles(t, f), "a")
	var rows []pdmRow
	for _, d := range sources {
		rows = append(rows, pdmRowsOf(t, f, d.path)...)
	}
	if len(rows) != 30 {
		t.Fatalf("setup: %d delete rows, want 30", len(rows))
	}
	// The job estimates bytes per row from the sources: aim for 10 rows
	// per file.
	bytesPerRow := float64(pdmTotalSize(sources)) / float64(len(rows))
	job := pdmJob(f, "defaults: {delete_min_input_files: 5}", "a")
	job.Settings.DeleteTargetFileSize = int64(bytesPerRow*10) + 1

	res, rep := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	outputs := pdmAssertMerged(t, f, "a", sources, pdmMaxSeq(sources), rows)
	if len(outputs) != 3 || rep.AddedDeleteFiles != 3 {
		t.Errorf("%d merged files (report %d), want 3", len(outputs), rep.AddedDeleteFiles)
	}
	var sum int64
	for _, out := range outputs {
		sum += out.size
		if n := out.df.Count(); n > 10 {
			t.Errorf("merged file %s holds %d rows, over the 10 the target allows", out.path, n)
		}
	}
	if rep.AddedDeleteBytes != sum {
		t.Errorf("added bytes %d, files hold %d", rep.AddedDeleteBytes, sum)
	}
	if c := f.contents(); c.Total != f.writer.Written() {
		t.Errorf("table %v, written %v", c.Total, f.writer.Written())
	}
}

// danglingSetup: partition a with six data files and seven delete files;
// then a delete whose filter covers the whole first data file removes that
// file outright, leaving the rows that named it dangling: D7 names the
// first and second files, D1 (the newest) only the first.
func danglingSetup(t *testing.T) (f *fixture, sources []pdmDeleteFile, d1 string, liveRows []pdmRow) {
	t.Helper()
	f = newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10) // ids 1..60; file k holds 10k-9..10k
	}
	first := pdmLocate(t, f, 1)[1].Path
	for _, id := range []int64{13, 24, 35, 46, 57} {
		pdmDelete(t, f, id)
	}
	pdmDelete(t, f, 3, 14) // D7
	before := pdmDeleteFiles(t, f)
	pdmDelete(t, f, 2) // D1
	sources = pdmOf(pdmDeleteFiles(t, f), "a")
	for _, d := range sources {
		if !slices.Contains(pdmPaths(before), d.path) {
			d1 = d.path
		}
		for _, r := range pdmRowsOf(t, f, d.path) {
			if r.Path != first {
				liveRows = append(liveRows, r)
			}
		}
	}
	// ids <= 10 are exactly the first file: its upper bound proves every
	// row matches, so iceberg-go drops the file instead of writing deletes.
	tbl := f.load()
	txn := tbl.NewTransaction()
	if err := txn.Delete(f.ctx, iceberg.LessThanEqual(iceberg.Reference("id"), int64(10)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.dataFiles("a")[first]; ok {
		t.Fatalf("setup: the first data file is still live")
	}
	if got := pdmOf(pdmDeleteFiles(t, f), "a"); len(got) != 7 || d1 == "" {
		t.Fatalf("setup: %d live delete files (want the 7 sources, now partly dangling), D1=%q", len(got), d1)
	}
	return f, sources, d1, liveRows
}

// Rows naming data files that are gone are dropped from the merged file and
// counted; a file holding nothing but such rows is removed outright.
func TestPositionDeleteRewriteDropsDanglingRows(t *testing.T) {
	f, sources, d1, liveRows := danglingSetup(t)
	before := f.contents()

	res, rep := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.DanglingDeleteRows != 2 {
		t.Errorf("dangling rows %d, want 2 (D1's and D7's row of the removed file)", rep.DanglingDeleteRows)
	}
	if rep.RewrittenDeleteFiles != 7 || rep.AddedDeleteFiles != 1 {
		t.Errorf("rewritten %d added %d; want 7 and 1", rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
	}
	// D1 contributed no row: the merged file takes the highest sequence
	// number among the files that did.
	var contributing []pdmDeleteFile
	for _, s := range sources {
		if s.path != d1 {
			contributing = append(contributing, s)
		}
	}
	pdmAssertMerged(t, f, "a", sources, pdmMaxSeq(contributing), liveRows)
	if after := f.contents(); after.Total != before.Total || !mapsEqual(after.IDs, before.IDs) {
		t.Errorf("rows %v after, %v before", after.Total, before.Total)
	}
}

// A file whose rows are all dangling goes even when too few files are left
// to merge.
func TestPositionDeleteRewriteRemovesDanglingFileBelowMinInputs(t *testing.T) {
	f, sources, d1, _ := danglingSetup(t)
	before := f.contents()

	res, rep := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 50}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.RewrittenDeleteFiles != 1 || rep.AddedDeleteFiles != 0 || rep.DanglingDeleteRows != 1 {
		t.Errorf("rewritten %d added %d dangling %d; want 1 0 1", rep.RewrittenDeleteFiles, rep.AddedDeleteFiles, rep.DanglingDeleteRows)
	}
	var want []string
	for _, s := range sources {
		if s.path != d1 {
			want = append(want, s.path)
		}
	}
	if got := pdmPaths(pdmOf(pdmDeleteFiles(t, f), "a")); !slices.Equal(got, want) {
		t.Errorf("live delete files %v, want all but D1: %v", got, want)
	}
	if got := pdmMergedOnDisk(t, f); len(got) != 0 {
		t.Errorf("merged files written: %v", got)
	}
	if after := f.contents(); after.Total != before.Total {
		t.Errorf("rows %v after, %v before", after.Total, before.Total)
	}
}

func mapsEqual(a, b map[int64]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Delete files bound to partition a whose rows name a live data file of
// partition b are left alone: X names a file of a and one of b
// (partition-scoped: only its a row applies), Y names only b's file
// (file-scoped by its exact bounds: it applies by path, across partitions).
// Merging Y into a partition-scoped file of a would bring b's row back.
func TestPositionDeleteRewriteLeavesCrossPartitionFilesAlone(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("b", 10) // ids 1..10
	for range 6 {
		f.commit("a", 10) // ids 11..70
	}
	for _, id := range []int64{12, 23, 34, 45, 56} {
		pdmDelete(t, f, id)
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
	aBefore := pdmOf(pdmDeleteFiles(t, f), "a")
	if len(aBefore) != 7 {
		t.Fatalf("setup: %d delete files in a, want 7", len(aBefore))
	}

	res, rep := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	after := f.contents()
	if after.Total != before.Total || !mapsEqual(after.IDs, before.IDs) {
		t.Errorf("rows %v after, %v before (ids 61, 5, 7 now %d, %d, %d)", after.Total, before.Total,
			after.IDs[61], after.IDs[5], after.IDs[7])
	}
	live := pdmPaths(pdmOf(pdmDeleteFiles(t, f), "a"))
	for _, p := range []string{x.FilePath(), y.FilePath()} {
		if !slices.Contains(live, p) {
			t.Errorf("cross-partition delete file %s was rewritten", p)
		}
	}
	if len(live) != 3 {
		t.Errorf("partition a has %d delete files, want X, Y and the merged one", len(live))
	}
	if rep.RewrittenDeleteFiles != 5 || rep.AddedDeleteFiles != 1 || rep.SkippedFiles != 2 {
		t.Errorf("rewritten %d added %d skipped %d; want 5 1 2", rep.RewrittenDeleteFiles, rep.AddedDeleteFiles, rep.SkippedFiles)
	}
}

// A writer deleting more rows of the partition while the job runs: its
// commit lands first, reactor's loses the race, re-checks that its sources
// are still live and commits on top. The writer's new delete file stays and
// no deleted row comes back.
func TestPositionDeleteRewriteWithConcurrentDeletes(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10) // ids 1..60
	}
	for i := range int64(6) {
		pdmDelete(t, f, 2+10*i)
	}
	sources := pdmOf(pdmDeleteFiles(t, f), "a")
	var rows []pdmRow
	for _, d := range sources {
		rows = append(rows, pdmRowsOf(t, f, d.path)...)
	}
	f.icat.beforeNextCommits(func() { pdmDelete(t, f, 4, 15, 59) })

	res, rep := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.Conflicts != 1 || rep.Attempts != 2 || rep.Commits != 1 {
		t.Errorf("conflicts %d attempts %d commits %d; want 1 2 1", rep.Conflicts, rep.Attempts, rep.Commits)
	}
	if rep.StagedMetadataCleanedUp == 0 {
		t.Errorf("the losing attempt's manifest list and manifests were not deleted")
	}
	c := f.contents()
	if c.Total != f.writer.Written() {
		t.Errorf("table %v, written %v", c.Total, f.writer.Written())
	}
	for _, id := range []int64{2, 12, 22, 32, 42, 52, 4, 15, 59} {
		if c.IDs[id] != 0 {
			t.Errorf("deleted id %d is visible again", id)
		}
	}
	live := pdmOf(pdmDeleteFiles(t, f), "a")
	var writers []pdmDeleteFile
	for _, d := range live {
		if !strings.HasSuffix(d.path, "-merged-deletes.parquet") {
			writers = append(writers, d)
		}
	}
	if len(live) != 2 || len(writers) != 1 {
		t.Fatalf("live delete files %v: want the merged one and the writer's concurrent one", pdmPaths(live))
	}
	if got := len(pdmRowsOf(t, f, writers[0].path)); got != 3 {
		t.Errorf("the writer's delete file holds %d rows, want 3", got)
	}
	pdmAssertMerged(t, f, "a", sources, pdmMaxSeq(sources), rows)
}

// A source removed by someone else while the job runs (here: replaced by an
// equivalent copy): the merge is stale, so the job abandons, deletes its
// output files and leaves the table as the other commit made it.
func TestPositionDeleteRewriteAbandonsWhenSourceRemoved(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10)
	}
	for i := range int64(6) {
		pdmDelete(t, f, 3+10*i)
	}
	sources := pdmOf(pdmDeleteFiles(t, f), "a")
	victim := sources[2]
	var copyPath string
	f.icat.beforeNextCommits(func() {
		cp := pdmWriteDeleteFile(t, f, "a", "-copy-deletes.parquet", pdmRowsOf(t, f, victim.path))
		copyPath = cp.FilePath()
		txn := f.load().NewTransaction()
		if err := txn.NewRewrite(nil).DeleteFile(victim.df).AddDeleteFile(cp).Commit(f.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(f.ctx); err != nil {
			t.Fatal(err)
		}
	})

	res, rep := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a"))
	if res.Outcome == jobs.Succeeded || rep.Commits != 0 {
		t.Fatalf("job committed (%v) over a removed source", res.Outcome)
	}
	if !errors.Is(res.Err, executor.ErrInputsGone) {
		t.Errorf("err = %v, want ErrInputsGone", res.Err)
	}
	if got := pdmMergedOnDisk(t, f); len(got) != 0 {
		t.Errorf("merged files left on disk: %v", got)
	}
	if rep.OutputFilesCleanedUp != 1 || rep.StagedMetadataCleanedUp == 0 {
		t.Errorf("cleaned up %d outputs and %d staged metadata files; want 1 and some", rep.OutputFilesCleanedUp, rep.StagedMetadataCleanedUp)
	}
	if c := f.contents(); c.Total != f.writer.Written() {
		t.Errorf("table %v, written %v", c.Total, f.writer.Written())
	}
	live := pdmPaths(pdmOf(pdmDeleteFiles(t, f), "a"))
	if len(live) != 6 || !slices.Contains(live, copyPath) || slices.Contains(live, victim.path) {
		t.Errorf("live delete files %v: want the five untouched sources and the copy", live)
	}
}

// A dry run reads and counts, and writes and commits nothing.
func TestPositionDeleteRewriteDryRun(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10)
	}
	for i := range int64(6) {
		pdmDelete(t, f, 5+10*i)
	}
	sources := pdmOf(pdmDeleteFiles(t, f), "a")
	snap := f.load().CurrentSnapshot().SnapshotID
	files := f.parquetFilesOnDisk()

	job := pdmJob(f, "defaults: {delete_min_input_files: 5}", "a")
	job.DryRun = true
	res, rep := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.Succeeded || !rep.DryRun {
		t.Fatalf("outcome %v (dry run %v), err %v", res.Outcome, rep.DryRun, res.Err)
	}
	if rep.RewrittenDeleteFiles != 6 || rep.AddedDeleteFiles != 1 || rep.RewrittenDeleteBytes != pdmTotalSize(sources) {
		t.Errorf("would rewrite %d files (%d bytes) into %d; want 6 (%d) into 1", rep.RewrittenDeleteFiles,
			rep.RewrittenDeleteBytes, rep.AddedDeleteFiles, pdmTotalSize(sources))
	}
	if rep.Commits != 0 || rep.Attempts != 0 {
		t.Errorf("commits %d attempts %d", rep.Commits, rep.Attempts)
	}
	if got := f.load().CurrentSnapshot().SnapshotID; got != snap {
		t.Errorf("dry run committed snapshot %d", got)
	}
	if got := f.parquetFilesOnDisk(); got != files {
		t.Errorf("%d parquet files on disk, were %d", got, files)
	}
	if got := pdmPaths(pdmOf(pdmDeleteFiles(t, f), "a")); !slices.Equal(got, pdmPaths(sources)) {
		t.Errorf("delete files changed: %v", got)
	}
}

// Fewer position-delete files than delete_min_input_files: nothing to do.
func TestPositionDeleteRewriteBelowMinInputsIsNoop(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10)
	}
	for i := range int64(4) {
		pdmDelete(t, f, 5+10*i)
	}
	snap := f.load().CurrentSnapshot().SnapshotID
	res, rep := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a"))
	if res.Outcome != jobs.Noop {
		t.Fatalf("outcome %v, err %v; want noop", res.Outcome, res.Err)
	}
	if rep.RewrittenDeleteFiles != 0 || rep.Attempts != 0 {
		t.Errorf("rewritten %d attempts %d", rep.RewrittenDeleteFiles, rep.Attempts)
	}
	if got := f.load().CurrentSnapshot().SnapshotID; got != snap {
		t.Errorf("no-op committed snapshot %d", got)
	}
	if got := pdmMergedOnDisk(t, f); len(got) != 0 {
		t.Errorf("merged files written: %v", got)
	}
	// With one more file the same job merges: the threshold is the only
	// reason it did nothing.
	pdmDelete(t, f, 45)
	if res, _ := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Errorf("with 5 files: outcome %v, err %v", res.Outcome, res.Err)
	}
}
