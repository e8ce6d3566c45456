package executor_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// tableAt is tbl as it was when snapshot id was current: main moved back in
// an uncommitted copy of the metadata, so a transaction on it stages a
// snapshot on id exactly as iceberg-go would have then.
func tableAt(t *testing.T, tbl *table.Table, id int64) *table.Table {
	t.Helper()
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef(table.MainBranch, id, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	meta, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	fsF := func(ctx context.Context) (iceio.IO, error) { return tbl.FS(ctx) }
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), fsF, nil)
}

// snapshotChange is what a snapshot's own manifests say it did.
type snapshotChange struct {
	addedData    []iceberg.DataFile
	addedDeletes map[int64][]iceberg.DataFile // by data sequence number
	removed      []iceberg.DataFile
}

func changeOf(t *testing.T, fs iceio.IO, snap *table.Snapshot) snapshotChange {
	t.Helper()
	manifests, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	c := snapshotChange{addedDeletes: map[int64][]iceberg.DataFile{}}
	for _, m := range manifests {
		if m.SnapshotID() != snap.SnapshotID {
			continue
		}
		entries, err := m.FetchEntries(fs, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.SnapshotID() != snap.SnapshotID {
				continue
			}
			df := e.DataFile()
			switch {
			case e.Status() == iceberg.EntryStatusDELETED:
				c.removed = append(c.removed, df)
			case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentData:
				c.addedData = append(c.addedData, df)
			case e.Status() == iceberg.EntryStatusADDED:
				c.addedDeletes[e.SequenceNum()] = append(c.addedDeletes[e.SequenceNum()], df)
			}
		}
	}
	return c
}

// shape renders a snapshot's manifest list for comparison: manifests it
// inherited by path, manifests it wrote by everything they hold, with its
// own snapshot id and sequence number spelled NEW (two stagings of the same
// change differ in those only).
func shape(t *testing.T, fs iceio.IO, snap *table.Snapshot) string {
	t.Helper()
	manifests, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	id := func(v int64) string {
		if v == snap.SnapshotID {
			return "NEW"
		}
		return fmt.Sprint(v)
	}
	seq := func(v int64) string {
		if v == snap.SequenceNumber {
			return "NEW"
		}
		return fmt.Sprint(v)
	}
	var b strings.Builder
	for _, m := range manifests {
		if m.SnapshotID() != snap.SnapshotID {
			fmt.Fprintf(&b, "inherited %s\n", m.FilePath())
			continue
		}
		fmt.Fprintf(&b, "written content=%v spec=%d added=%d/%d existing=%d/%d deleted=%d/%d seq=%s min-seq=%s partitions=%s\n",
			m.ManifestContent(), m.PartitionSpecID(), m.AddedDataFiles(), m.AddedRows(), m.ExistingDataFiles(), m.ExistingRows(),
			m.DeletedDataFiles(), m.DeletedRows(), seq(m.SequenceNum()), seq(m.MinSequenceNum()), fieldSummaries(m.Partitions()))
		entries, err := m.FetchEntries(fs, false)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range entries {
			fseq := "nil"
			if p := e.FileSequenceNum(); p != nil {
				fseq = seq(*p)
			}
			lines = append(lines, fmt.Sprintf("  %v snapshot=%s seq=%s file-seq=%s %v %s rows=%d size=%d",
				e.Status(), id(e.SnapshotID()), seq(e.SequenceNum()), fseq, e.DataFile().ContentType(),
				e.DataFile().FilePath(), e.DataFile().Count(), e.DataFile().FileSizeBytes()))
		}
		slices.Sort(lines)
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	return b.String()
}

func fieldSummaries(fs []iceberg.FieldSummary) string {
	var parts []string
	for _, f := range fs {
		s := fmt.Sprintf("null=%v", f.ContainsNull)
		if f.ContainsNaN != nil {
			s += fmt.Sprintf(" nan=%v", *f.ContainsNaN)
		}
		if f.LowerBound != nil {
			s += fmt.Sprintf(" lower=%q", *f.LowerBound)
		}
		if f.UpperBound != nil {
			s += fmt.Sprintf(" upper=%q", *f.UpperBound)
		}
		parts = append(parts, "{"+s+"}")
	}
	return strings.Join(parts, ",")
}

// stageWithIcebergGo stages change on the table as of parent through
// iceberg-go's RewriteFiles and returns the staged snapshot.
func stageWithIcebergGo(t *testing.T, f *fixture, parent int64, c snapshotChange, props iceberg.Properties) *table.Snapshot {
	t.Helper()
	txn := tableAt(t, f.load(), parent).NewTransaction()
	rw := txn.NewRewrite(props)
	for _, df := range c.removed {
		rw.DeleteFile(df)
	}
	for _, df := range c.addedData {
		rw.AddDataFile(df)
	}
	for seq, files := range c.addedDeletes {
		for _, df := range files {
			rw.AddDeleteFileWithDataSequenceNumber(df, seq)
		}
	}
	if err := rw.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		t.Fatal(err)
	}
	return staged.CurrentSnapshot()
}

// assertParity checks that the snapshot reactor committed last is what
// iceberg-go's own rewrite producer writes for the same change on the same
// parent: the same manifests (inherited ones in the same order, written
// ones with the same entries, sequence numbers and partition summaries)
// and the same summary, totals included.
func assertParity(t *testing.T, f *fixture) {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ours := tbl.CurrentSnapshot()
	if ours.ParentSnapshotID == nil {
		t.Fatal("reactor's snapshot has no parent")
	}
	c := changeOf(t, fs, ours)
	props := iceberg.Properties{jobs.SnapshotJobProperty: ours.Summary.Properties[jobs.SnapshotJobProperty]}
	theirs := stageWithIcebergGo(t, f, *ours.ParentSnapshotID, c, props)
	if got, want := shape(t, fs, ours), shape(t, fs, theirs); got != want {
		t.Errorf("manifest list differs from iceberg-go's\nreactor:\n%s\niceberg-go:\n%s", got, want)
	}
	if ours.Summary.Operation != theirs.Summary.Operation {
		t.Errorf("operation %q, iceberg-go %q", ours.Summary.Operation, theirs.Summary.Operation)
	}
	for k, v := range theirs.Summary.Properties {
		if ours.Summary.Properties[k] != v {
			t.Errorf("summary %s = %q, iceberg-go %q", k, ours.Summary.Properties[k], v)
		}
	}
	for k, v := range ours.Summary.Properties {
		if _, ok := theirs.Summary.Properties[k]; !ok {
			t.Errorf("summary %s = %q, not in iceberg-go's", k, v)
		}
	}
	if ours.SequenceNumber != tbl.Metadata().SnapshotByID(*ours.ParentSnapshotID).SequenceNumber+1 {
		t.Errorf("sequence number %d does not follow its parent's", ours.SequenceNumber)
	}
	if tbl.Metadata().NameMapping() == nil {
		t.Errorf("no default name mapping after the rewrite (iceberg-go sets one)")
	}
}

// The staged commit path writes what iceberg-go writes, with and without
// commits racing it: compaction applying position and equality deletes
// (dead ones removed, a manifest shared with another partition copied),
// and the position-delete rewrite.
func TestStagedCommitMatchesIcebergGo(t *testing.T) {
	setup := func(t *testing.T) *fixture {
		f := newFixture(t, streamwriter.MergeOnReadProperties)
		for range 6 {
			f.commit("a", 10) // ids 1..60
		}
		f.commit("b", 10) // ids 61..70
		mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 3, 17, 44) })
		mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 5, 62) })
		mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 21, 59, 65) })
		return f
	}
	races := map[string]func(t *testing.T, f *fixture) []func(){
		"alone": func(*testing.T, *fixture) []func() { return nil },
		"racing writers": func(t *testing.T, f *fixture) []func() {
			return []func(){
				func() { f.commit("a", 5) },
				func() {
					f.commit("b", 5)
					mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 63) })
				},
				func() { mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 66) }) },
			}
		},
	}
	for name, race := range races {
		t.Run("compaction/"+name, func(t *testing.T) {
			f := setup(t)
			f.icat.beforeNextCommits(race(t, f)...)
			res, rep := f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
			}
			t.Logf("attempts %d conflicts %d", rep.Attempts, rep.Conflicts)
			if rep.RemovedDeleteFiles != 3 {
				t.Errorf("removed %d delete files, want 3", rep.RemovedDeleteFiles)
			}
			if got := f.contents(); got.Total != f.writer.Written() {
				t.Errorf("table %v, written %v", got.Total, f.writer.Written())
			}
			assertParity(t, f)
		})
		t.Run("position-delete rewrite/"+name, func(t *testing.T) {
			f := setup(t)
			mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 7, 64) })
			f.icat.beforeNextCommits(race(t, f)...)
			res, _ := f.exec.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 2}", "a"))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
			}
			if got := f.contents(); got.Total != f.writer.Written() {
				t.Errorf("table %v, written %v", got.Total, f.writer.Written())
			}
			assertParity(t, f)
		})
	}
}
