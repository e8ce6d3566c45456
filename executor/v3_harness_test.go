package executor_test

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/streamwriter"
)

// Helpers for the format v3 tests (prefix v3): deletion vectors and row
// lineage.

// v3Props makes a merge-on-read table of format v3: iceberg-go's deletes
// write one deletion vector per data file.
func v3Props() iceberg.Properties {
	p := maps.Clone(streamwriter.MergeOnReadProperties)
	p[table.PropertyFormatVersion] = "3"
	return p
}

// v3Lineage is one live row's lineage: its _row_id and
// _last_updated_sequence_number as a scan reads them.
type v3Lineage struct {
	RowID, Seq int64
}

// v3RowLineage reads every live row's lineage by id.
func v3RowLineage(t *testing.T, f *fixture) map[int64]v3Lineage {
	t.Helper()
	_, itr, err := f.load().Scan(table.WithRowLineage()).ToArrowRecords(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]v3Lineage{}
	for rec, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) *array.Int64 {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("no column %s in %s", name, rec.Schema())
			}
			return rec.Column(idx[0]).(*array.Int64)
		}
		ids, rowIDs, seqs := col("id"), col(iceberg.RowIDColumnName), col(iceberg.LastUpdatedSequenceNumberColumnName)
		for i := range int(rec.NumRows()) {
			if rowIDs.IsNull(i) || seqs.IsNull(i) {
				t.Fatalf("id %d: null lineage (_row_id null %v, sequence number null %v)", ids.Value(i), rowIDs.IsNull(i), seqs.IsNull(i))
			}
			out[ids.Value(i)] = v3Lineage{rowIDs.Value(i), seqs.Value(i)}
		}
		rec.Release()
	}
	return out
}

// v3DV is one live deletion vector of the current snapshot.
type v3DV struct {
	df  iceberg.DataFile
	ref string // the data file it deletes from
	seq int64
}

// v3DVs lists the live deletion vectors, by referenced data file then path.
func v3DVs(t *testing.T, f *fixture) []v3DV {
	t.Helper()
	var out []v3DV
	for _, d := range pdmDeleteFiles(t, f) {
		if !table.IsDeletionVector(d.df) {
			continue
		}
		out = append(out, v3DV{df: d.df, ref: *d.df.ReferencedDataFile(), seq: d.seq})
	}
	slices.SortFunc(out, func(a, b v3DV) int {
		return cmp.Or(cmp.Compare(a.ref, b.ref), cmp.Compare(a.df.FilePath(), b.df.FilePath()))
	})
	return out
}

// v3AssertDVRules checks the spec's rules on the live deletion vectors: at
// most one per data file, and each names a live data file.
func v3AssertDVRules(t *testing.T, f *fixture) {
	t.Helper()
	for _, p := range v3RuleBreaks(t, f.ctx, f.load()) {
		t.Error(p)
	}
}

// v3RuleBreaks lists how tbl's current snapshot breaks the v3 rules reactor
// keeps: two deletion vectors for one data file, a vector naming a data
// file that is not live, a Parquet position-delete file left.
func v3RuleBreaks(t testing.TB, ctx context.Context, tbl *table.Table) []string {
	t.Helper()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	var dvRefs []string
	var out []string
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatal(err)
			}
			df := entry.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentData:
				live[df.FilePath()] = true
			case table.IsDeletionVector(df):
				dvRefs = append(dvRefs, *df.ReferencedDataFile())
			case df.ContentType() == iceberg.EntryContentPosDeletes:
				out = append(out, "Parquet position-delete file "+df.FilePath()+" on a v3 table")
			}
		}
	}
	seen := map[string]int{}
	for _, ref := range dvRefs {
		if seen[ref]++; seen[ref] == 2 {
			out = append(out, "data file "+ref+" has two or more deletion vectors")
		}
		if !live[ref] {
			out = append(out, "a deletion vector names data file "+ref+", which is not live")
		}
	}
	return out
}

// v3WriteDV writes one deletion vector deleting positions of data file
// dataPath (partition category, spec 0) into a Puffin file of its own,
// uncommitted.
func v3WriteDV(t *testing.T, f *fixture, category, dataPath string, positions ...int64) iceberg.DataFile {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := dv.NewDVWriter(fs.(iceio.WriteFileIO), func(id int32) *iceberg.PartitionSpec { return tbl.Metadata().PartitionSpecByID(int(id)) })
	if err := w.Add(dataPath, positions, 0, map[int]any{1000: category}); err != nil {
		t.Fatal(err)
	}
	out, err := w.Flush(f.ctx, tbl.Location()+"/data/category="+category+"/"+uuid.NewString()+"-test-dv.puffin")
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// v3CommitDeletes commits delete files through iceberg-go's row delta, the
// way a writer adds deletion vectors.
func v3CommitDeletes(t *testing.T, f *fixture, files ...iceberg.DataFile) {
	t.Helper()
	txn := f.load().NewTransaction()
	if err := txn.NewRowDelta(nil).AddDeletes(files...).Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// v3Without is what c reads once the rows ids of partition category are
// deleted (for tables a scan refuses to read: two deletion vectors for
// one data file).
func v3Without(c streamwriter.Contents, category string, ids ...int64) streamwriter.Contents {
	out := streamwriter.Contents{Total: c.Total, ByPartition: maps.Clone(c.ByPartition), IDs: maps.Clone(c.IDs)}
	for _, id := range ids {
		out.Total.Remove(id, category, streamwriter.Payload(id))
		p := out.ByPartition[category]
		p.Remove(id, category, streamwriter.Payload(id))
		out.ByPartition[category] = p
		if out.IDs[id]--; out.IDs[id] == 0 {
			delete(out.IDs, id)
		}
	}
	return out
}

// v3LineageWithout is lineage without the rows ids.
func v3LineageWithout(lineage map[int64]v3Lineage, ids ...int64) map[int64]v3Lineage {
	out := maps.Clone(lineage)
	for _, id := range ids {
		delete(out, id)
	}
	return out
}

// dvSeqMax is the highest sequence number among dvs of data file ref.
func dvSeqMax(dvs []v3DV, ref string) int64 {
	var m int64
	for _, d := range dvs {
		if d.ref == ref {
			m = max(m, d.seq)
		}
	}
	return m
}

// v3AssertLineageSnapshot checks the row lineage fields of a delete-only
// snapshot reactor committed: it starts at the table's next-row-id before
// it and adds no rows (its manifest list assigned no ids).
func v3AssertLineageSnapshot(t *testing.T, f *fixture, nextRowIDBefore int64) {
	t.Helper()
	tbl := f.load()
	snap := tbl.CurrentSnapshot()
	if snap.FirstRowID == nil || *snap.FirstRowID != nextRowIDBefore || snap.AddedRows == nil || *snap.AddedRows != 0 {
		t.Errorf("snapshot %d: first-row-id %v added-rows %v, want %d and 0", snap.SnapshotID, snap.FirstRowID, snap.AddedRows, nextRowIDBefore)
	}
	if got := tbl.Metadata().NextRowID(); got != nextRowIDBefore {
		t.Errorf("next-row-id %d after a delete-only commit, want %d", got, nextRowIDBefore)
	}
}

// v3MergedOnDisk lists the Puffin files the position-delete rewrite wrote
// under the table's data directory, committed or not.
func v3MergedOnDisk(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	if err := walk(f.load().Location()+"/data", func(p string) {
		if strings.HasSuffix(p, "-merged-dvs.puffin") {
			out = append(out, p)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// v3DropDataFile removes data file path alone, leaving its deletion vector
// live (dangling), as a writer that ignores the v3 rules would; iceberg-go
// removes the vector with its data file, so the commit goes through
// reactor's staged snapshot.
func v3DropDataFile(t *testing.T, f *fixture, path string) {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var df iceberg.DataFile
	for _, task := range tasks {
		if task.File.FilePath() == path {
			df = task.File
		}
	}
	if df == nil {
		t.Fatalf("no live data file %s", path)
	}
	sw, err := commit.NewSnapshotWriter(tbl, fs)
	if err != nil {
		t.Fatal(err)
	}
	st := &commit.Staged{Writer: sw, FS: fs, Op: table.OpDelete, Always: map[string]iceberg.DataFile{path: df}, DataTracked: true}
	if err := st.Prepare(f.ctx, tbl); err != nil {
		t.Fatal(err)
	}
	if err := st.Advance(tbl.Metadata()); err != nil {
		t.Fatal(err)
	}
	manifests, err := st.ManifestsFor(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	summary, err := st.Summary(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Commit(f.ctx, f.cat, tbl, 0, manifests, summary); err != nil {
		t.Fatal(err)
	}
}
