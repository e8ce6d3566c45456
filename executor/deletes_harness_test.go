package executor_test

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
)

// Helpers for the position-delete rewrite tests (prefix pdm: other test
// files of the package have their own delete helpers).

// pdmRow is one (file_path, pos) row of a position-delete file.
type pdmRow struct {
	Path string
	Pos  int64
}

func pdmCompareRows(a, b pdmRow) int {
	if c := cmp.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	return cmp.Compare(a.Pos, b.Pos)
}

// pdmDeleteFile is one live position-delete file of the current snapshot,
// with what its manifest entry says.
type pdmDeleteFile struct {
	df       iceberg.DataFile
	path     string
	category string
	seq      int64
	size     int64
}

// pdmDeleteFiles lists the live position-delete files of the current
// snapshot, sorted by path.
func pdmDeleteFiles(t *testing.T, f *fixture) []pdmDeleteFile {
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
	var out []pdmDeleteFile
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatal(err)
			}
			d := entry.DataFile()
			if d.ContentType() != iceberg.EntryContentPosDeletes {
				continue
			}
			out = append(out, pdmDeleteFile{df: d, path: d.FilePath(), category: fmt.Sprint(d.Partition()[1000]),
				seq: entry.SequenceNum(), size: d.FileSizeBytes()})
		}
	}
	slices.SortFunc(out, func(a, b pdmDeleteFile) int { return cmp.Compare(a.path, b.path) })
	return out
}

// pdmOf keeps the files of one partition.
func pdmOf(files []pdmDeleteFile, category string) []pdmDeleteFile {
	var out []pdmDeleteFile
	for _, d := range files {
		if d.category == category {
			out = append(out, d)
		}
	}
	return out
}

func pdmPaths(files []pdmDeleteFile) []string {
	out := make([]string, len(files))
	for i, d := range files {
		out[i] = d.path
	}
	return out
}

func pdmMaxSeq(files []pdmDeleteFile) int64 {
	var m int64
	for _, d := range files {
		m = max(m, d.seq)
	}
	return m
}

func pdmTotalSize(files []pdmDeleteFile) int64 {
	var n int64
	for _, d := range files {
		n += d.size
	}
	return n
}

// pdmJob is a rewrite_position_deletes job for the given partitions.
func pdmJob(f *fixture, yaml string, categories ...string) jobs.Job {
	j := f.job(yaml, categories...)
	j.Kind = jobkind.RewritePositionDeletes
	return j
}

// pdmDelete deletes rows through the writer (merge-on-read position
// deletes, one file per partition touched, one snapshot).
func pdmDelete(t *testing.T, f *fixture, ids ...int64) {
	t.Helper()
	snap, err := f.writer.DeleteRows(f.ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if snap == 0 {
		t.Fatalf("delete of %v deleted nothing", ids)
	}
}

// pdmRowsOf reads the rows of one delete file straight from its Parquet
// file, in file order.
func pdmRowsOf(t *testing.T, f *fixture, path string) []pdmRow {
	t.Helper()
	fs, err := f.load().FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []pdmRow
	pdmReadColumns(t, fs, path, func(rec map[string]any, i int) {
		out = append(out, pdmRow{rec["file_path"].(*array.String).Value(i), rec["pos"].(*array.Int64).Value(i)})
	})
	return out
}

// pdmLocate finds the data file and position of each id among the live
// data files, by reading their id columns.
func pdmLocate(t *testing.T, f *fixture, ids ...int64) map[int64]pdmRow {
	t.Helper()
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]pdmRow{}
	for _, task := range tasks {
		path := task.File.FilePath()
		var pos int64
		pdmReadColumns(t, fs, path, func(rec map[string]any, i int) {
			if id := rec["id"].(*array.Int64).Value(i); want[id] {
				out[id] = pdmRow{path, pos}
			}
			pos++
		})
	}
	if len(out) != len(want) {
		t.Fatalf("located %d of %d ids", len(out), len(want))
	}
	return out
}

func pdmReadColumns(t *testing.T, fs iceio.IO, path string, visit func(rec map[string]any, i int)) {
	t.Helper()
	fh, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	pr, err := file.NewParquetReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	at, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		cols := map[string]any{}
		for i, field := range rec.Schema().Fields() {
			cols[field.Name] = rec.Column(i)
		}
		for i := range int(rec.NumRows()) {
			visit(cols, i)
		}
	}
}

// pdmWriteDeleteFile hand-writes a position-delete file bound to partition
// category (spec 0) with exact file_path bounds, as a writer other than
// iceberg-go's might; nameSuffix ends its file name. It is not committed.
func pdmWriteDeleteFile(t *testing.T, f *fixture, category, nameSuffix string, rows []pdmRow) iceberg.DataFile {
	t.Helper()
	rows = slices.Clone(rows)
	slices.SortFunc(rows, pdmCompareRows)
	tbl := f.load()
	sc, err := table.SchemaToArrowSchema(iceberg.PositionalDeleteSchema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.Path)
		b.Field(1).(*array.Int64Builder).Append(r.Pos)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := tbl.Location() + "/data/category=" + category + "/" + uuid.NewString() + nameSuffix
	out, err := fs.(iceio.WriteFileIO).Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, out, parquet.NewWriterProperties(parquet.WithStats(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	meta, err := w.FileMetadata()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(strings.TrimPrefix(path, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema: iceberg.PositionalDeleteSchema, Spec: *tbl.Metadata().PartitionSpecByID(0),
		Format: iceberg.ParquetFile, Metadata: meta, FilePath: path, FileSize: st.Size(),
		Content:         iceberg.EntryContentPosDeletes,
		PartitionValues: map[int]any{1000: category},
		Properties:      iceberg.Properties{table.MetricsModeColumnConfPrefix + ".file_path": "full"},
		FormatVersion:   tbl.Metadata().Version(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return df
}

// pdmMergedOnDisk lists the files under the table's data directory that
// the position-delete rewrite wrote, committed or not.
func pdmMergedOnDisk(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	if err := walk(f.load().Location()+"/data", func(p string) {
		if strings.HasSuffix(p, "-merged-deletes.parquet") {
			out = append(out, p)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
