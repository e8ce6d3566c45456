package objectio_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/objectio"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

// TestCompactionRequests: compacting N small files on S3 reads each with
// one GET (at most 2N data-file GETs allowed, no HEADs), every row
// arrives, and the connections opened stay within twice the read
// concurrency.
func TestCompactionRequests(t *testing.T) {
	const files, rows = 24, 500
	ctx := context.Background()
	bucket := newBucket(t)
	dir := t.TempDir()
	p, err := embedded.CatalogProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	p["warehouse"] = "s3://" + bucket + "/warehouse"
	for k, v := range props() {
		p[k] = v
	}
	cat, err := catalog.Load(ctx, embedded.CatalogName, p)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "events"}
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, ident, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "score", Type: iceberg.PrimitiveTypes.Float64}))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	var written []iceberg.DataFile
	for i := range files {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for r := range rows {
			b.Field(0).(*array.Int64Builder).Append(int64(i*rows + r))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d-%d", i, r))
			b.Field(2).(*array.Float64Builder).Append(float64(r) / 3)
		}
		rec := b.NewRecordBatch()
		b.Release()
		for df, err := range table.WriteRecords(ctx, tbl, sc, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }) {
			if err != nil {
				t.Fatal(err)
			}
			written = append(written, df)
		}
		rec.Release()
	}
	// Several commits, so planning reads several manifests.
	for start := 0; start < files; start += 6 {
		txn := tbl.NewTransaction()
		if err := txn.AddDataFiles(ctx, written[start:start+6], nil); err != nil {
			t.Fatal(err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	cfg, err := thresholds.Parse([]byte("defaults:\n  target_file_size: 64MiB\n  min_input_files: 2\n  small_file_count: 2\n  min_reader_margin: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := executor.New(executor.Options{Catalog: cat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: metrics.New(), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	testFront.reset()
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	job, err := planner.ManualJob(ctx, tbl, cfg, planner.KindCompact, planner.ManualOptions{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	res, rep := exec.Run(ctx, job)
	if res.Err != nil || rep.RewrittenDataFiles != files {
		t.Fatalf("compaction: %v, rewrote %d of %d files", res.Err, rep.RewrittenDataFiles, files)
	}
	reqs, conns := testFront.reset()
	t.Logf("requests %v, connections %d", reqs, conns)
	gets := reqs["GET data"] + reqs["GET data ranged"]
	if gets > 2*files || reqs["HEAD data"] > 0 {
		t.Fatalf("compaction of %d files made %d data-file GETs and %d HEADs, want at most %d and none", files, gets, reqs["HEAD data"], 2*files)
	}
	if conns > 2*objectio.DefaultReadConcurrency {
		t.Fatalf("compaction opened %d connections, want at most %d", conns, 2*objectio.DefaultReadConcurrency)
	}

	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		n += rec.NumRows()
		rec.Release()
	}
	if n != files*rows {
		t.Fatalf("after compaction %d rows, want %d", n, files*rows)
	}
}
