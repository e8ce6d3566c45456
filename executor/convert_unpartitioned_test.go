package executor_test

import (
	"iter"
	"log/slog"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
)

// An unpartitioned table: its equality deletes are global (they apply to
// every older data file); converted, the table reads the same rows and no
// equality delete is left.
func TestConvertEqualityDeletesUnpartitioned(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := table.Identifier{"db", "flat"}
	if err := cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(id), nil); err != nil {
		t.Fatal(err)
	}
	props := iceberg.Properties{table.PropertyFormatVersion: "2"}
	for k, v := range streamwriter.MergeOnReadProperties {
		props[k] = v
	}
	tbl, err := cat.CreateTable(ctx, id, streamwriter.Schema(), catalog.WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	appendRows := func(first, n int64) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for i := first; i < first+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(i)
			b.Field(1).(*array.StringBuilder).Append("x")
			b.Field(2).(*array.StringBuilder).Append(streamwriter.Payload(i))
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		cur, err := cat.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		txn := cur.NewTransaction()
		if err := txn.Append(ctx, rdr, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deleteIDs := func(ids ...int64) {
		idField, _ := tbl.Schema().FindFieldByID(1)
		dsc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, idField), nil, true, false)
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, dsc)
		defer b.Release()
		for _, i := range ids {
			b.Field(0).(*array.Int64Builder).Append(i)
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		cur, err := cat.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		txn := cur.NewTransaction()
		files, err := txn.WriteEqualityDeletes(ctx, []int{1}, iter.Seq2[arrow.RecordBatch, error](func(yield func(arrow.RecordBatch, error) bool) {
			yield(rec, nil)
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.NewRowDelta(nil).AddDeletes(files...).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	appendRows(1, 10)
	appendRows(11, 10)
	deleteIDs(3, 14, 25) // 25 is written next, after the delete
	appendRows(21, 10)
	deleteIDs(3, 22)

	read := func() streamwriter.Contents {
		cur, err := cat.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		c, err := streamwriter.Read(ctx, cur)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := read()
	if before.IDs[3]+before.IDs[14]+before.IDs[22] != 0 || before.IDs[25] != 1 {
		t.Fatalf("setup: ids 3, 14, 22, 25 occur %d, %d, %d, %d times", before.IDs[3], before.IDs[14], before.IDs[22], before.IDs[25])
	}
	exec := newTestExecutor(t, cat, slog.New(slog.DiscardHandler), metrics.New())
	key := jobs.NewKeyer(tbl.Metadata()).Key(0, nil)
	job := jobs.Job{ID: "test-flat", Kind: jobkind.ConvertEqualityDeletes, Table: tablename.Of(id),
		Partitions: []jobs.Partition{{Key: key}}}
	res, rep := exec.Run(ctx, job)
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if c := rep.Conversion; c.EqualityDeleteFilesRemoved != 2 || c.RowsMatched != 3 || c.DataFilesScanned != 3 {
		t.Errorf("counts %+v; want 2 removed, 3 rows matched (3, 14, 22), 3 data files scanned", c)
	}
	sameContents(t, "after conversion", before, read())
	res, _ = exec.Run(ctx, job)
	if res.Outcome != jobs.Noop {
		t.Errorf("second conversion: %v (%v)", res.Outcome, res.Err)
	}
}
