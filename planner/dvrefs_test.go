package planner

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// dvRefs counts duplicates and dangling vectors exactly as vectors and data
// files come and go.
func TestDVRefs(t *testing.T) {
	vec := func(ref string, off int64) iceberg.DataFile {
		t.Helper()
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, "s3://b/t/data/v.puffin",
			iceberg.PuffinFile, nil, nil, nil, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		return b.ReferencedDataFile(ref).ContentOffset(off).ContentSizeInBytes(40).Build()
	}
	ps := &partitionState{Key: "p"}
	d := dvRefs{}
	check := func(step string, dup, dangling int) {
		t.Helper()
		if ps.DuplicateDeletionVectors != dup || ps.DanglingDeletionVectors != dangling {
			t.Errorf("%s: %d duplicate, %d dangling; want %d, %d", step, ps.DuplicateDeletionVectors, ps.DanglingDeletionVectors, dup, dangling)
		}
	}
	x1, x2, y := vec("s3://b/t/data/x.parquet", 4), vec("s3://b/t/data/x.parquet", 44), vec("s3://b/t/data/y.parquet", 84)
	d.added(ps, x1)
	d.added(ps, y)
	check("one vector per file", 0, 0)
	d.added(ps, x2)
	check("a second vector for x", 1, 0)
	d.dataGone([]uint64{locationHash("s3://b/t/data/x.parquet")})
	check("x removed without its vectors", 1, 2)
	d.removed(x1)
	check("one of x's vectors removed", 0, 1)
	d.removed(x2)
	check("x's last vector removed", 0, 0)
	d.danglingUnless(map[uint64]struct{}{})
	check("a state built without y", 0, 1)
	if len(d) != 1 {
		t.Errorf("%d data files followed, want 1 (y)", len(d))
	}
}

// On a real v3 table the planner's state sees a second vector for one data
// file, both when it follows the commits and when it is built from the
// snapshot, and deletion_vector_rules is over for it.
func TestStateCountsDuplicateDeletionVectors(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	props := iceberg.Properties{table.PropertyFormatVersion: "3"}
	for k, v := range streamwriter.MergeOnReadProperties {
		props[k] = v
	}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, props); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	for range 2 {
		if _, err := w.Commit(ctx, "a", 20); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.DeleteRows(ctx, 3); err != nil {
		t.Fatal(err)
	}
	sz := sizesOf(thresholds.Default().For("db.t", nil))
	load := func() *table.Table {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	var tc tableCounters
	if _, err := tc.advance(ctx, load(), sz); err != nil {
		t.Fatal(err)
	}
	if tot := tc.totals(); tot.DeletionVectors != 1 || tot.DuplicateDeletionVectors != 0 {
		t.Fatalf("before: %d vectors, %d duplicate; want 1, 0", tot.DeletionVectors, tot.DuplicateDeletionVectors)
	}

	// A second vector for the data file of id 3 (position 2), committed as
	// a writer that does not merge with the existing one would.
	tbl := load()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var target string
	for _, task := range tasks {
		if len(task.DeletionVectorFiles) > 0 {
			target = task.File.FilePath()
		}
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dw := dv.NewDVWriter(fs.(iceio.WriteFileIO), func(id int32) *iceberg.PartitionSpec { return tbl.Metadata().PartitionSpecByID(int(id)) })
	if err := dw.Add(target, []int64{5}, 0, map[int]any{1000: "a"}); err != nil {
		t.Fatal(err)
	}
	out, err := dw.Flush(ctx, tbl.Location()+"/data/category=a/dup.puffin")
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(nil).AddDeletes(out...).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := tc.advance(ctx, load(), sz); err != nil {
		t.Fatal(err)
	}
	var fresh tableCounters
	if _, err := fresh.advance(ctx, load(), sz); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*tableCounters{"followed": &tc, "built": &fresh} {
		tot := c.totals()
		if tot.DeletionVectors != 2 || tot.DuplicateDeletionVectors != 1 || tot.DanglingDeletionVectors != 0 {
			t.Errorf("%s: %d vectors, %d duplicate, %d dangling; want 2, 1, 0", name, tot.DeletionVectors,
				tot.DuplicateDeletionVectors, tot.DanglingDeletionVectors)
		}
		if chk := dvRulesCheck(tot); !chk.Over || chk.Measured != 1 {
			t.Errorf("%s: deletion_vector_rules %+v, want over at 1", name, chk)
		}
	}
	// reactor rewrite-deletes takes the partition though it holds no
	// Parquet position-delete file.
	cfg, err := thresholds.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	job, err := ManualJob(ctx, load(), cfg, jobkind.RewritePositionDeletes, ManualOptions{}, time.Now())
	if err != nil || len(job.Partitions) != 1 {
		t.Errorf("manual rewrite-deletes: %d partitions (%v), want the one with deletion vectors", len(job.Partitions), err)
	}
}
