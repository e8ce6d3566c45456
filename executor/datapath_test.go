package executor_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// wideIdent is a table of many column types, for comparing what the two
// data paths write column by column.
var wideIdent = table.Identifier{"db", "wide"}

func wideSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "category", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "ratio", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 6, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 7, Name: "price", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 8, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 9, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 10, Name: "counter", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 11, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 12, Name: "tags", Type: &iceberg.ListType{ElementID: 13, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}},
	)
}

// wideBatch builds rows first..first+n-1 of category: deterministic in
// first, with nulls, NaNs and long strings (whose bounds are truncated).
func wideBatch(sc *arrow.Schema, category string, first int64, n int) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(uint64(first), 7))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range int64(n) {
		id := first + i
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(1e12)))
		b.Field(2).(*array.StringBuilder).Append(category)
		switch {
		case id%97 == 0:
			b.Field(3).(*array.Float64Builder).Append(math.NaN())
		case id%89 == 0:
			b.Field(3).(*array.Float64Builder).AppendNull()
		default:
			b.Field(3).(*array.Float64Builder).Append(rng.NormFloat64() * 100)
		}
		b.Field(4).(*array.Float32Builder).Append(rng.Float32())
		b.Field(5).(*array.StringBuilder).Append(strings.Repeat(string(rune('a'+rng.IntN(26))), 5+rng.IntN(40)))
		b.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(1e9) - 5e8))
		b.Field(7).(*array.BooleanBuilder).Append(rng.IntN(3) == 0)
		b.Field(8).(*array.Date32Builder).Append(arrow.Date32(19000 + rng.IntN(2000)))
		if id%7 == 0 {
			b.Field(9).(*array.Int32Builder).AppendNull()
		} else {
			b.Field(9).(*array.Int32Builder).Append(rng.Int32N(1000) - 500)
		}
		blob := make([]byte, rng.IntN(30))
		for j := range blob {
			blob[j] = byte(rng.IntN(256))
		}
		b.Field(10).(*array.BinaryBuilder).Append(blob)
		tags := b.Field(11).(*array.ListBuilder)
		tags.Append(true)
		for range rng.IntN(3) {
			tags.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("t%d", rng.IntN(50)))
		}
	}
	return b.NewRecordBatch()
}

// wideTable is a catalog holding the wide table, filled by fill.
type wideTable struct {
	t    *testing.T
	ctx  context.Context
	cat  catalog.Catalog
	exec *executor.Executor
}

func newWideTable(t *testing.T, props iceberg.Properties, icebergWriter bool, fill func(context.Context, *table.Table) []iceberg.DataFile) *wideTable {
	t.Helper()
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "category", Transform: iceberg.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, wideIdent, wideSchema(), catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(ctx, fill(ctx, tbl), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	var e *executor.Executor
	if icebergWriter {
		e = newExecutor(t, executor.Options{Catalog: cat, Logger: log, Metrics: metrics.New()})
		executor.UseIcebergWriter(e)
	} else {
		e = newExecutor(t, executor.Options{Catalog: cat, Logger: log, Metrics: metrics.New(), Concurrency: 3})
		executor.PoisonFreedBuffers(e)
	}
	return &wideTable{t: t, ctx: ctx, cat: cat, exec: e}
}

// writeFiles writes one data file per batch.
func writeFiles(t *testing.T, ctx context.Context, tbl *table.Table, batches ...arrow.RecordBatch) []iceberg.DataFile {
	t.Helper()
	var out []iceberg.DataFile
	for _, rec := range batches {
		one := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
		for df, err := range table.WriteRecords(ctx, tbl, rec.Schema(), one) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, df)
		}
	}
	return out
}

func (w *wideTable) load() *table.Table {
	w.t.Helper()
	tbl, err := w.cat.LoadTable(w.ctx, wideIdent)
	if err != nil {
		w.t.Fatal(err)
	}
	return tbl
}

func (w *wideTable) compact(yaml string, categories ...string) executor.Report {
	w.t.Helper()
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		w.t.Fatal(err)
	}
	tbl := w.load()
	j := jobs.Job{ID: "test-" + w.t.Name(), Kind: jobkind.Compact, Table: tablename.Of(wideIdent),
		Settings: cfg.For("db.wide", tbl.Properties())}
	for _, c := range categories {
		j.Partitions = append(j.Partitions, jobs.Partition{Key: "category=" + c})
	}
	res, rep := w.exec.Run(w.ctx, j)
	if res.Outcome != jobs.Succeeded {
		w.t.Fatalf("compaction: %s %v", res.Outcome, res.Err)
	}
	return rep
}

// rowDigests are the table's rows, each as a string of every value, sorted.
func (w *wideTable) rowDigests() []string {
	w.t.Helper()
	tbl := w.load()
	_, recs, err := tbl.Scan().ToArrowRecords(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	var rows []string
	for rec, err := range recs {
		if err != nil {
			w.t.Fatal(err)
		}
		for r := range int(rec.NumRows()) {
			var sb strings.Builder
			for c := range int(rec.NumCols()) {
				sb.WriteString(rec.Column(c).ValueStr(r))
				sb.WriteByte('|')
			}
			rows = append(rows, sb.String())
		}
		rec.Release()
	}
	slices.Sort(rows)
	return rows
}

// liveFiles are the current snapshot's data files with their manifest
// entries' sequence numbers, by partition, in file order.
type liveFile struct {
	df      iceberg.DataFile
	dataSeq int64
	fileSeq int64
	status  iceberg.ManifestEntryStatus
	addedBy int64
}

func (w *wideTable) liveFiles() map[string][]liveFile {
	w.t.Helper()
	tbl := w.load()
	fs, err := tbl.FS(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string][]liveFile{}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				w.t.Fatal(err)
			}
			lf := liveFile{df: e.DataFile(), dataSeq: e.SequenceNum(), status: e.Status(), addedBy: e.SnapshotID()}
			if fs := e.FileSequenceNum(); fs != nil {
				lf.fileSeq = *fs
			}
			key := fmt.Sprint(e.DataFile().Partition()[1000])
			out[key] = append(out[key], lf)
		}
	}
	for _, files := range out {
		slices.SortFunc(files, func(a, b liveFile) int { return strings.Compare(a.df.FilePath(), b.df.FilePath()) })
	}
	return out
}

// fileFacts is what a data file's manifest entry says about it, minus
// its name.
func fileFacts(lf liveFile, tbl *table.Table) string {
	df := lf.df
	var sb strings.Builder
	fmt.Fprintf(&sb, "content=%v format=%v spec=%d partition=%v records=%d status=%v data_seq=%d file_seq=%d sort_order=%v\n",
		df.ContentType(), df.FileFormat(), df.SpecID(), df.Partition(), df.Count(), lf.status, lf.dataSeq, lf.fileSeq, df.SortOrderID())
	ids := make([]int, 0)
	for id := range df.ValueCounts() {
		ids = append(ids, id)
	}
	for id := range df.LowerBoundValues() {
		if _, ok := df.ValueCounts()[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		name, _ := tbl.Schema().FindColumnName(id)
		fmt.Fprintf(&sb, "  %s: values=%d nulls=%d nans=%v lower=%x upper=%x\n", name, df.ValueCounts()[id],
			df.NullValueCounts()[id], df.NaNValueCounts()[id], df.LowerBoundValues()[id], df.UpperBoundValues()[id])
	}
	return sb.String()
}

// Reactor's data path writes what iceberg-go's does: the same rows, and,
// where both write one file per partition, files whose manifest entries
// agree on every count, bound, partition value and sequence number; with
// several output files per partition (units written at once), the same
// rows, each file's statistics those iceberg-go computes from the file's
// own footer. Freed buffers are poisoned on reactor's side, so a buffer
// used after its release would show.
func TestDataPathsAgree(t *testing.T) {
	fill := func(files int, rows int) func(context.Context, *table.Table) []iceberg.DataFile {
		return func(ctx context.Context, tbl *table.Table) []iceberg.DataFile {
			sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
			if err != nil {
				t.Fatal(err)
			}
			var batches []arrow.RecordBatch
			for i := range files {
				for _, c := range []string{"a", "b"} {
					batches = append(batches, wideBatch(sc, c, int64(i*rows)+map[string]int64{"a": 0, "b": 1 << 30}[c], rows))
				}
			}
			return writeFiles(t, ctx, tbl, batches...)
		}
	}
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
		files int
		rows  int
		yaml  string
	}{
		{name: "one output file per partition", files: 6, rows: 2000,
			yaml: "defaults: {target_file_size: 64MiB, min_input_files: 2, small_file_count: 2}"},
		{name: "table writer properties", files: 5, rows: 3000,
			props: iceberg.Properties{"write.parquet.compression-codec": "snappy", "write.parquet.page-row-limit": "500",
				"write.parquet.row-group-limit": "4000", "write.metadata.metrics.default": "truncate(4)",
				"write.metadata.metrics.column.amount": "counts"},
			yaml: "defaults: {target_file_size: 64MiB, min_input_files: 2, small_file_count: 2}"},
		{name: "several output files per partition", files: 12, rows: 3000,
			// %d: three input files' worth
			yaml: "defaults: {target_file_size: %d, small_file_ratio: 0.99, max_file_ratio: 20, min_input_files: 2, small_file_count: 2, tier_fan_in: 30, partial_progress_max_commits: 1}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := newWideTable(t, tc.props, true, fill(tc.files, tc.rows))
			own := newWideTable(t, tc.props, false, fill(tc.files, tc.rows))
			before := ref.rowDigests()
			if got := own.rowDigests(); !slices.Equal(got, before) {
				t.Fatal("the two tables differ before compaction")
			}
			yaml := tc.yaml
			if strings.Contains(yaml, "%d") {
				var largest int64
				for _, files := range ref.liveFiles() {
					for _, lf := range files {
						largest = max(largest, lf.df.FileSizeBytes())
					}
				}
				yaml = fmt.Sprintf(yaml, 3*largest)
			}
			refRep := ref.compact(yaml, "a", "b")
			ownRep := own.compact(yaml, "a", "b")
			if refRep.RewrittenDataFiles != ownRep.RewrittenDataFiles || refRep.RewrittenDataFiles != 2*tc.files {
				t.Fatalf("rewritten files: iceberg-go %d, reactor %d, want %d", refRep.RewrittenDataFiles, ownRep.RewrittenDataFiles, 2*tc.files)
			}
			if got := own.rowDigests(); !slices.Equal(got, before) {
				t.Fatalf("reactor's data path changed the rows: %d rows, want %d", len(got), len(before))
			}
			if got := ref.rowDigests(); !slices.Equal(got, before) {
				t.Fatalf("iceberg-go's data path changed the rows: %d rows, want %d", len(got), len(before))
			}
			refFiles, ownFiles := ref.liveFiles(), own.liveFiles()
			refTbl, ownTbl := ref.load(), own.load()
			for _, c := range []string{"a", "b"} {
				r, o := refFiles[c], ownFiles[c]
				if len(r) == 1 && len(o) == 1 {
					if a, b := fileFacts(r[0], refTbl), fileFacts(o[0], ownTbl); a != b {
						t.Errorf("partition %s: iceberg-go's file:\n%s\nreactor's file:\n%s", c, a, b)
					}
					if r[0].df.FileSizeBytes() != o[0].df.FileSizeBytes() {
						t.Logf("partition %s: file size %d (iceberg-go) vs %d (reactor)", c, r[0].df.FileSizeBytes(), o[0].df.FileSizeBytes())
					}
					continue
				}
				if len(o) < 2 {
					t.Fatalf("partition %s: reactor wrote %d files, want several", c, len(o))
				}
				var records int64
				for _, lf := range o {
					records += lf.df.Count()
					fs, err := ownTbl.FS(own.ctx)
					if err != nil {
						t.Fatal(err)
					}
					want, err := table.FileToDataFile(own.ctx, fs, lf.df.FilePath(), ownTbl.Schema(), ownTbl.Spec(), 0, ownTbl.Properties())
					if err != nil {
						t.Fatal(err)
					}
					if a, b := fileFacts(liveFile{df: want, dataSeq: lf.dataSeq, fileSeq: lf.fileSeq, status: lf.status}, ownTbl), fileFacts(lf, ownTbl); a != b {
						t.Errorf("partition %s, %s: recorded\n%s\nfrom the footer\n%s", c, lf.df.FilePath(), b, a)
					}
					if lf.dataSeq != o[0].dataSeq || lf.addedBy != ownTbl.CurrentSnapshot().SnapshotID {
						t.Errorf("file %s: data sequence %d added by %d, want %d by %d", lf.df.FilePath(), lf.dataSeq, lf.addedBy,
							o[0].dataSeq, ownTbl.CurrentSnapshot().SnapshotID)
					}
				}
				if records != int64(tc.files*tc.rows) {
					t.Errorf("partition %s: %d records in reactor's files, want %d", c, records, tc.files*tc.rows)
				}
				if r[0].dataSeq != o[0].dataSeq {
					t.Errorf("partition %s: data sequence %d (iceberg-go) vs %d (reactor)", c, r[0].dataSeq, o[0].dataSeq)
				}
			}
		})
	}
}

// Deletes stay applied the same way on both data paths: the same rows
// survive and the same delete files go.
func TestDataPathsApplyDeletesAlike(t *testing.T) {
	run := func(icebergWriter bool) (streamwriter.Contents, executor.Report, map[iceberg.ManifestEntryContent][]int) {
		f := newFixture(t, streamwriter.MergeOnReadProperties)
		if icebergWriter {
			executor.UseIcebergWriter(f.exec)
		}
		for range 6 {
			f.commit("a", 10)
		}
		f.commit("b", 10)
		mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 3, 17, 44) })
		mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 5, 62) })
		mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 21, 59, 65) })
		res, rep := f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {min_input_files: 2}", "a")))
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("compaction: %s %v", res.Outcome, res.Err)
		}
		left := map[iceberg.ManifestEntryContent][]int{}
		for k, v := range deleteFilesByKind(t, f, "a") {
			left[k] = append(left[k], len(v))
		}
		for k, v := range deleteFilesByKind(t, f, "b") {
			left[k] = append(left[k], len(v))
		}
		return f.contents(), rep, left
	}
	refRows, refRep, refLeft := run(true)
	ownRows, ownRep, ownLeft := run(false)
	if refRows.Total != ownRows.Total || !reflect.DeepEqual(refRows.IDs, ownRows.IDs) {
		t.Fatalf("rows after compaction: iceberg-go %v, reactor %v", refRows.Total, ownRows.Total)
	}
	if refRep.RemovedDeleteFiles != ownRep.RemovedDeleteFiles || refRep.RewrittenDataFiles != ownRep.RewrittenDataFiles {
		t.Fatalf("reports differ: iceberg-go removed %d delete files and rewrote %d, reactor %d and %d",
			refRep.RemovedDeleteFiles, refRep.RewrittenDataFiles, ownRep.RemovedDeleteFiles, ownRep.RewrittenDataFiles)
	}
	if !reflect.DeepEqual(refLeft, ownLeft) {
		t.Fatalf("delete files left: iceberg-go %v, reactor %v", refLeft, ownLeft)
	}
}
