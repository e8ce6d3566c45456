package executor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// liveFilesByContent lists the current snapshot's live files by content.
func liveFilesByContent(t *testing.T, f *fixture) map[iceberg.ManifestEntryContent][]iceberg.DataFile {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[iceberg.ManifestEntryContent][]iceberg.DataFile{}
	for _, m := range manifests {
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out[e.DataFile().ContentType()] = append(out[e.DataFile().ContentType()], e.DataFile())
		}
	}
	return out
}

// assertTotals checks the current snapshot's summary totals against the
// files it holds: a commit that counted a removal twice, or missed one,
// shows here.
func assertTotals(t *testing.T, f *fixture) {
	t.Helper()
	live := liveFilesByContent(t, f)
	var records, size, pos, eq int64
	for _, df := range live[iceberg.EntryContentData] {
		records += df.Count()
		size += df.FileSizeBytes()
	}
	for _, df := range live[iceberg.EntryContentPosDeletes] {
		pos += df.Count()
		size += df.FileSizeBytes()
	}
	for _, df := range live[iceberg.EntryContentEqDeletes] {
		eq += df.Count()
		size += df.FileSizeBytes()
	}
	want := map[string]int64{
		"total-data-files":       int64(len(live[iceberg.EntryContentData])),
		"total-delete-files":     int64(len(live[iceberg.EntryContentPosDeletes]) + len(live[iceberg.EntryContentEqDeletes])),
		"total-records":          records,
		"total-files-size":       size,
		"total-position-deletes": pos,
		"total-equality-deletes": eq,
	}
	props := f.load().CurrentSnapshot().Summary.Properties
	for k, v := range want {
		if got := props.GetInt64(k, -1); got != v {
			t.Errorf("summary %s = %d, the table holds %d", k, got, v)
		}
	}
}

// writeEqualityDelete commits an equality delete on id in category's
// partition without telling the writer's tally (the row must already be
// deleted, or the tally is off).
func writeEqualityDelete(t *testing.T, f *fixture, id int64, category string) iceberg.DataFile {
	t.Helper()
	tbl := f.load()
	idField, _ := tbl.Schema().FindFieldByName("id")
	catField, _ := tbl.Schema().FindFieldByName("category")
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, idField, catField), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	b.Field(1).(*array.StringBuilder).Append(category)
	rec := b.NewRecordBatch()
	defer rec.Release()
	txn := tbl.NewTransaction()
	files, err := txn.WriteEqualityDeletes(f.ctx, []int{idField.ID}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.NewRowDelta(nil).AddDeletes(files...).Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// A manifest rewrite (Spark's rewrite_manifests, or a writer's merge-append)
// that lands between two attempts moves the rewrite's inputs to new
// manifests: the retry finds them there among the manifests that commit
// added, and the result is what iceberg-go writes on that head.
func TestStagedCommitFollowsInputsIntoRewrittenManifests(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for i := range 12 {
		f.commit([]string{"a", "b"}[i%2], 10)
	}
	mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 1, 2, 22) })
	f.icat.beforeNextCommits(func() {
		txn := f.load().NewTransaction()
		if _, err := txn.RewriteManifests(f.ctx); err != nil {
			t.Error(err)
			return
		}
		if _, err := txn.Commit(f.ctx); err != nil {
			t.Error(err)
		}
	})
	res, rep := f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")))
	if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (%v), %d conflicts; want success after one", res.Outcome, res.Err, rep.Conflicts)
	}
	if got := f.contents(); got.Total != f.writer.Written() {
		t.Errorf("table %v, written %v", got.Total, f.writer.Written())
	}
	if n := len(f.dataFiles("a")); n != 1 {
		t.Errorf("partition a has %d data files, want 1", n)
	}
	assertParity(t, f)
	assertTotals(t, f)
}

// A commit between two attempts that adds a data file at or below the
// sequence number of a delete the rewrite found dead (a rewrite elsewhere
// keeping old sequence numbers) may make that delete apply again: the
// retry keeps it.
func TestStagedCommitKeepsADeleteALowSequenceFileMayNeed(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10) // ids 1..60
	}
	f.commit("b", 10)
	mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 21) })
	if eq := deleteFilesByKind(t, f, "a")[iceberg.EntryContentEqDeletes]; len(eq) != 1 {
		t.Fatalf("setup: equality deletes %v", eq)
	}
	f.icat.beforeNextCommits(func() {
		// Rewrite b's file as a copy of itself at data sequence number 1.
		tbl := f.load()
		var old iceberg.DataFile
		for _, df := range liveFilesByContent(t, f)[iceberg.EntryContentData] {
			if df.Partition()[1000] == "b" {
				old = df
			}
		}
		data, err := os.ReadFile(strings.TrimPrefix(old.FilePath(), "file://"))
		if err != nil {
			t.Error(err)
			return
		}
		path := strings.TrimSuffix(old.FilePath(), ".parquet") + "-copy.parquet"
		if err := os.WriteFile(strings.TrimPrefix(path, "file://"), data, 0o644); err != nil {
			t.Error(err)
			return
		}
		bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, path, iceberg.ParquetFile,
			old.Partition(), nil, nil, old.Count(), old.FileSizeBytes())
		if err != nil {
			t.Error(err)
			return
		}
		txn := tbl.NewTransaction()
		rw := txn.NewRewrite(nil).DeleteFile(old).AddDataFile(bld.Build()).DataSequenceNumber(1)
		if err := rw.Commit(f.ctx); err != nil {
			t.Error(err)
			return
		}
		if _, err := txn.Commit(f.ctx); err != nil {
			t.Error(err)
		}
	})
	res, rep := f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")))
	if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (%v), %d conflicts; want success after one", res.Outcome, res.Err, rep.Conflicts)
	}
	// The rewrite's own snapshot keeps the equality delete. (The
	// metadata-only pass after it may still drop it: it checks partitions,
	// and the low-sequence file is in another one.)
	tbl := f.load()
	var rewrite *table.Snapshot
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[jobs.SnapshotJobProperty] != "" &&
			snap.Summary.Properties.GetInt("deleted-data-files", 0) > 0 {
			rewrite = &snap
		}
	}
	if rewrite == nil {
		t.Fatal("no rewrite snapshot in the history")
	}
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, df := range changeOf(t, fs, rewrite).removed {
		if df.ContentType() != iceberg.EntryContentData {
			t.Errorf("the rewrite removed %s; a file at a lower sequence number landed before it committed", df.FilePath())
		}
	}
	if got := f.contents(); got.Total != f.writer.Written() || got.IDs[21] != 0 {
		t.Errorf("table %v (id 21 x%d), written %v", got.Total, got.IDs[21], f.writer.Written())
	}
	assertTotals(t, f)
}

// A delete file the rewrite would remove that a commit between two attempts
// removed already is not removed again (nor counted twice in the totals).
func TestStagedCommitLeavesADeleteSomeoneElseRemoved(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 6 {
		f.commit("a", 10)
	}
	mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 21) })
	dup := writeEqualityDelete(t, f, 21, "a") // the same row again: removing it changes nothing
	f.icat.beforeNextCommits(func() {
		txn := f.load().NewTransaction()
		if err := txn.NewRewrite(nil).DeleteFile(dup).Commit(f.ctx); err != nil {
			t.Error(err)
			return
		}
		if _, err := txn.Commit(f.ctx); err != nil {
			t.Error(err)
		}
	})
	res, rep := f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")))
	if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (%v), %d conflicts; want success after one", res.Outcome, res.Err, rep.Conflicts)
	}
	if rep.RemovedDeleteFiles != 1 {
		t.Errorf("removed %d delete files, want 1 (the other one was gone)", rep.RemovedDeleteFiles)
	}
	if left := deleteFilesByKind(t, f, "a"); len(left) != 0 {
		t.Errorf("delete files left in a: %v", left)
	}
	if got := f.contents(); got.Total != f.writer.Written() {
		t.Errorf("table %v, written %v", got.Total, f.writer.Written())
	}
	assertParity(t, f)
	assertTotals(t, f)
}

// ambiguousCatalog answers reactor's next commit with an error that says
// nothing about whether it landed, after letting it land or not.
type ambiguousCatalog struct {
	*interleavingCatalog
	land bool
	used bool
}

func (c *ambiguousCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.used {
		return c.interleavingCatalog.CommitTable(ctx, id, reqs, updates)
	}
	c.used = true
	if c.land {
		if _, _, err := c.interleavingCatalog.CommitTable(ctx, id, reqs, updates); err != nil {
			return nil, "", err
		}
	}
	return nil, "", errors.New("read tcp 10.0.0.1:5432: connection reset by peer")
}

// When the catalog does not say whether a commit landed, reactor looks: a
// commit that landed is a success, one that did not leaves the outputs and
// the manifests in place (a snapshot might reference them) and fails.
func TestUnknownCommitStateNeverDeletesWhatMayBeLive(t *testing.T) {
	for _, land := range []bool{true, false} {
		t.Run(fmt.Sprintf("landed=%v", land), func(t *testing.T) {
			f := newFixture(t, nil)
			for range 6 {
				f.commit("a", 10)
			}
			exec := newExecutorOn(f, &ambiguousCatalog{interleavingCatalog: f.icat, land: land})
			before := f.parquetFilesOnDisk()
			res, rep := exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
			if got, want := f.contents().Total, f.writer.Written(); got != want {
				t.Errorf("table %v, written %v", got, want)
			}
			if rep.OutputFilesCleanedUp != 0 || rep.StagedMetadataCleanedUp != 0 {
				t.Errorf("deleted %d outputs and %d metadata files of a commit that may have landed",
					rep.OutputFilesCleanedUp, rep.StagedMetadataCleanedUp)
			}
			if got := f.parquetFilesOnDisk(); got != before+1 {
				t.Errorf("%d Parquet files on disk, want %d (inputs and the output)", got, before+1)
			}
			if land {
				if res.Outcome != jobs.Succeeded || len(f.dataFiles("a")) != 1 {
					t.Errorf("outcome %v (%v), %d files in a; want the landed commit found", res.Outcome, res.Err, len(f.dataFiles("a")))
				}
				return
			}
			if res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), "commit outcome unknown") {
				t.Errorf("outcome %v (%v), want failed with an unknown outcome", res.Outcome, res.Err)
			}
			if left := unreferencedMetadata(t, f); len(left) == 0 {
				t.Errorf("the attempt's manifests and list were deleted; they may be live")
			}
		})
	}
}
