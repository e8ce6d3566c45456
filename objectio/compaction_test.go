package objectio_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/objectio"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

// smallFileTable creates db.events on a new bucket with files data files
// of rows rows, committed six at a time, in a SQL catalog whose FileIO
// goes through the counting front (extra are more catalog properties).
func smallFileTable(t *testing.T, files, rows int, extra ...string) (catalog.Catalog, table.Identifier) {
	t.Helper()
	ctx := context.Background()
	bucket := newBucket(t)
	dir := t.TempDir()
	p, err := embedded.CatalogProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	p["warehouse"] = "s3://" + bucket + "/warehouse"
	for k, v := range props(extra...) {
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
		if err := txn.AddDataFiles(ctx, written[start:min(start+6, files)], nil); err != nil {
			t.Fatal(err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	return cat, ident
}

// TestCompactionRequests: compacting N small files on S3 reads each with
// one GET (at most 2N data-file GETs allowed, no HEADs), every row
// arrives, and the connections opened stay within twice the read
// concurrency.
func TestCompactionRequests(t *testing.T) {
	const files, rows = 24, 500
	cat, ident := smallFileTable(t, files, rows)
	testFront.reset()
	res, rep := compact(t, cat, ident)
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

	if n := countRows(t, cat, ident); n != files*rows {
		t.Fatalf("after compaction %d rows, want %d", n, files*rows)
	}

	// Expiry deletes the replaced files, several at once on S3, each
	// exactly once, and the rows stay.
	testFront.reset()
	res, rep = runJob(t, cat, ident, jobkind.ExpireSnapshots, planner.ManualOptions{OlderThan: time.Millisecond, RetainLast: 1})
	if res.Err != nil || rep.Expiry.DeletedDataFiles != files {
		t.Fatalf("expiry: %v, deleted %d data files, want %d", res.Err, rep.Expiry.DeletedDataFiles, files)
	}
	reqs, _ = testFront.reset()
	if reqs["DELETE data"] != files {
		t.Fatalf("expiry requests %v, want %d data-file DELETEs", reqs, files)
	}
	if n := countRows(t, cat, ident); n != files*rows {
		t.Fatalf("after expiry %d rows, want %d", n, files*rows)
	}
}

// compact runs a compaction of every small file of ident.
func compact(t *testing.T, cat catalog.Catalog, ident table.Identifier) (jobs.Result, executor.Report) {
	t.Helper()
	return runJob(t, cat, ident, jobkind.Compact, planner.ManualOptions{})
}

func runJob(t *testing.T, cat catalog.Catalog, ident table.Identifier, kind jobkind.Kind, mo planner.ManualOptions) (jobs.Result, executor.Report) {
	t.Helper()
	ctx := context.Background()
	cfg, err := thresholds.Parse([]byte("defaults:\n  target_file_size: 64MiB\n  min_input_files: 2\n  small_file_count: 2\n  min_reader_margin: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := executor.New(executor.Options{Catalog: cat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: metrics.New(), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	job, err := planner.ManualJob(ctx, tbl, cfg, kind, mo, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return exec.Run(ctx, job)
}

func countRows(t *testing.T, cat catalog.Catalog, ident table.Identifier) int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
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
	return n
}

// TestThrottledWritesFailCleanly: a store throttling every data-file
// write for the whole job fails the compaction with the store's error,
// and nothing is committed: the table keeps its snapshot, files and rows.
func TestThrottledWritesFailCleanly(t *testing.T) {
	const files, rows = 8, 200
	ctx := context.Background()
	cat, ident := smallFileTable(t, files, rows, objectio.MaxAttemptsProperty, "2")
	before, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	testFront.failing(t, func(method, kind string) bool { return method == "PUT" && kind == "data" })
	res, _ := compact(t, cat, ident)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "SlowDown") {
		t.Fatalf("compaction against a throttling store: %v, want its SlowDown error", res.Err)
	}
	after, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID {
		t.Fatalf("a failed compaction committed snapshot %d", after.CurrentSnapshot().SnapshotID)
	}
	testFront.failing(t, nil)
	if n := countRows(t, cat, ident); n != files*rows {
		t.Fatalf("after the failed compaction %d rows, want %d", n, files*rows)
	}
}

// TestCompactionOverResetBodies: a store cutting the first GET of every
// data file mid-body still gets a compaction that commits every row (each
// read made again whole); one cutting every GET of the data files fails
// the compaction and commits nothing: the table keeps its snapshot and
// rows, and every file either snapshot references is whole (its size is
// the manifest's).
func TestCompactionOverResetBodies(t *testing.T) {
	const files, rows = 8, 2000
	ctx := context.Background()
	cat, ident := smallFileTable(t, files, rows, objectio.MaxAttemptsProperty, "2")
	before, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	testFront.cutting(t, func(method, kind, _ string) bool { return method == "GET" && strings.HasPrefix(kind, "data") })
	testFront.reset()
	res, _ := compact(t, cat, ident)
	reqs, _ := testFront.reset()
	if res.Err == nil || !strings.Contains(res.Err.Error(), "unexpected EOF") {
		t.Fatalf("compaction against a store cutting every data-file body: %v (requests %v), want an unexpected EOF", res.Err, reqs)
	}
	if reqs["cut GET data ranged"] == 0 {
		t.Fatalf("requests %v: no data-file body was cut", reqs)
	}
	after, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID {
		t.Fatalf("a failed compaction committed snapshot %d", after.CurrentSnapshot().SnapshotID)
	}

	seen := map[string]bool{}
	testFront.cutting(t, func(method, kind, path string) bool {
		if method != "GET" || !strings.HasPrefix(kind, "data") {
			return false
		}
		first := !seen[path]
		seen[path] = true
		return first
	})
	testFront.reset()
	res, rep := compact(t, cat, ident)
	reqs, _ = testFront.reset()
	if res.Err != nil || rep.RewrittenDataFiles != files {
		t.Fatalf("compaction with each data file's first GET cut: %v, rewrote %d of %d (requests %v)", res.Err, rep.RewrittenDataFiles, files, reqs)
	}
	if reqs["cut GET data ranged"] != files {
		t.Fatalf("requests %v, want the first GET of each of the %d data files cut", reqs, files)
	}
	testFront.cutting(t, nil)
	if n := countRows(t, cat, ident); n != files*rows {
		t.Fatalf("after the compaction %d rows, want %d", n, files*rows)
	}
	after, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := after.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := after.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		st, err := fsys.(iceio.StatIO).Stat(task.File.FilePath())
		if err != nil || st.Size() != task.File.FileSizeBytes() {
			t.Fatalf("committed file %s: %v, size %v, manifest says %d", task.File.FilePath(), err, st, task.File.FileSizeBytes())
		}
	}
}
