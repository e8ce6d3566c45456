package executor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

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
	"github.com/icereactor/reactor/sortorder"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// sortSchema has a column of every kind the sort tests order by.
func sortSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "category", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "x", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "y", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 7, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 8, Name: "attrs", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 9, Name: "k", Type: iceberg.PrimitiveTypes.String}}}},
	)
}

// sortRow is one row of the sort tests' table.
type sortRow struct {
	id     int64
	x      *int64
	y      *float64
	name   *string
	amount *int64 // cents
	ts     *time.Time
}

type sortTable struct {
	t    testing.TB
	ctx  context.Context
	cat  catalog.Catalog
	exec *executor.Executor
}

func newSortTable(t testing.TB, props iceberg.Properties) *sortTable {
	t.Helper()
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "category"})
	all := iceberg.Properties{table.PropertyFormatVersion: "2"}
	for k, v := range props {
		all[k] = v
	}
	if _, err := cat.CreateTable(ctx, ident, sortSchema(), catalog.WithPartitionSpec(&spec), catalog.WithProperties(all)); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &sortTable{t: t, ctx: ctx, cat: cat, exec: newTestExecutor(t, cat, quiet, metrics.New())}
}

func (s *sortTable) load() *table.Table {
	s.t.Helper()
	tbl, err := s.cat.LoadTable(s.ctx, ident)
	if err != nil {
		s.t.Fatal(err)
	}
	return tbl
}

// appendRows commits rows to partition a in one snapshot (one file).
func (s *sortTable) appendRows(rows []sortRow) {
	s.t.Helper()
	tbl := s.load()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		s.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append("a")
		if r.x != nil {
			b.Field(2).(*array.Int64Builder).Append(*r.x)
		} else {
			b.Field(2).AppendNull()
		}
		if r.y != nil {
			b.Field(3).(*array.Float64Builder).Append(*r.y)
		} else {
			b.Field(3).AppendNull()
		}
		if r.name != nil {
			b.Field(4).(*array.StringBuilder).Append(*r.name)
		} else {
			b.Field(4).AppendNull()
		}
		if r.amount != nil {
			b.Field(5).(*array.Decimal128Builder).Append(decimal128.FromI64(*r.amount))
		} else {
			b.Field(5).AppendNull()
		}
		if r.ts != nil {
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
		} else {
			b.Field(6).AppendNull()
		}
		sb := b.Field(7).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprint("k", r.id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		s.t.Fatal(err)
	}
	defer rdr.Release()
	if _, err := tbl.Append(s.ctx, rdr, nil); err != nil {
		s.t.Fatal(err)
	}
}

// job builds a job of kind over partition a with the thresholds yaml.
func (s *sortTable) job(kind jobkind.Kind, yaml string) jobs.Job {
	s.t.Helper()
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		s.t.Fatal(err)
	}
	tbl := s.load()
	set := cfg.For("db.events", tbl.Properties())
	return jobs.Job{ID: "test-" + s.t.Name(), Kind: kind, Table: tablename.Of(ident), Settings: set,
		SortOrder: set.SortOrder, Partitions: []jobs.Partition{{Key: "category=a"}}}
}

// files returns the live data files, each with its rows in file order,
// rendered exactly (floats by their bits).
func (s *sortTable) files() map[string][]string {
	s.t.Helper()
	tbl := s.load()
	tasks, err := tbl.Scan().PlanFiles(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, task := range tasks {
		_, recs, err := tbl.Scan().ReadTasks(s.ctx, []table.FileScanTask{task})
		if err != nil {
			s.t.Fatal(err)
		}
		for rec, err := range recs {
			if err != nil {
				s.t.Fatal(err)
			}
			for i := range int(rec.NumRows()) {
				out[task.File.FilePath()] = append(out[task.File.FilePath()], renderRow(rec, i))
			}
			rec.Release()
		}
	}
	return out
}

func renderRow(rec arrow.RecordBatch, i int) string {
	parts := make([]string, rec.NumCols())
	for c := range int(rec.NumCols()) {
		col := rec.Column(c)
		switch {
		case col.IsNull(i):
			parts[c] = "null"
		case col.DataType().ID() == arrow.FLOAT64:
			parts[c] = fmt.Sprintf("f%016x", math.Float64bits(col.(*array.Float64).Value(i)))
		default:
			parts[c] = col.ValueStr(i)
		}
	}
	return strings.Join(parts, "|")
}

// allRows is the multiset of rows, sorted for comparison.
func allRows(files map[string][]string) []string {
	var rows []string
	for _, f := range files {
		rows = append(rows, f...)
	}
	slices.Sort(rows)
	return rows
}

// keptFraction is the share of data files iceberg-go's scan planning keeps
// for a predicate: what min/max pruning saves a reader.
func (s *sortTable) keptFraction(pred iceberg.BooleanExpression) (kept, total int) {
	s.t.Helper()
	tbl := s.load()
	all, err := tbl.Scan().PlanFiles(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	some, err := tbl.Scan(table.WithRowFilter(pred)).PlanFiles(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return len(some), len(all)
}

func ptr[T any](v T) *T { return &v }

// randomRows are rows whose x and y are uniform over [0, 10000): every
// small file a writer commits spans the whole range of both.
func randomRows(r *rand.Rand, first int64, n int) []sortRow {
	rows := make([]sortRow, n)
	for i := range rows {
		rows[i] = sortRow{id: first + int64(i), x: ptr(r.Int64N(10_000)), y: ptr(float64(r.IntN(10_000))),
			name: ptr(fmt.Sprintf("n%05d", r.IntN(100_000))), amount: ptr(r.Int64N(1_000_000) - 500_000),
			ts: ptr(time.Unix(r.Int64N(2_000_000_000)-1_000_000_000, 0).UTC())}
	}
	return rows
}

// On a partition whose rows arrived in random order, the share of files
// scan planning keeps for a range predicate: sort improves its leading
// column, z-order every one of its columns, bin-pack none. Rows are the
// same before and after each.
func TestSortAndZOrderRestorePruning(t *testing.T) {
	const files, perFile = 24, 400
	type outcome struct{ x, y float64 }
	results := map[string]outcome{}
	var before outcome
	for _, c := range []struct {
		name string
		kind jobkind.Kind
		yaml string
	}{
		{"binpack", jobkind.Compact, "defaults: {target_file_size: 40KiB, small_file_count: 5, min_input_files: 2}"},
		{"sort", jobkind.Sort, "defaults: {target_file_size: 40KiB, strategy: sort, sort_order: 'x ASC'}"},
		{"zorder", jobkind.Sort, "defaults: {target_file_size: 40KiB, strategy: zorder, sort_order: 'zorder(x, y)'}"},
	} {
		s := newSortTable(t, iceberg.Properties{table.WriteTargetFileSizeBytesKey: "40960"})
		r := rand.New(rand.NewPCG(1, 2)) // the same rows for every strategy
		for f := range files {
			s.appendRows(randomRows(r, int64(f*perFile), perFile))
		}
		xPred := iceberg.LessThan(iceberg.Reference("x"), int64(1000))
		yPred := iceberg.LessThan(iceberg.Reference("y"), float64(1000))
		kx, n := s.keptFraction(xPred)
		ky, _ := s.keptFraction(yPred)
		before = outcome{float64(kx) / float64(n), float64(ky) / float64(n)}
		rowsBefore := allRows(s.files())

		res, rep := s.exec.Run(s.ctx, s.job(c.kind, c.yaml))
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("%s: outcome %v, err %v", c.name, res.Outcome, res.Err)
		}
		if got := allRows(s.files()); !slices.Equal(got, rowsBefore) {
			t.Fatalf("%s changed the rows: %d before, %d after", c.name, len(rowsBefore), len(got))
		}
		kx, n = s.keptFraction(xPred)
		ky, _ = s.keptFraction(yPred)
		results[c.name] = outcome{float64(kx) / float64(n), float64(ky) / float64(n)}
		t.Logf("%-7s: %d -> %d files; x<1000 keeps %d/%d, y<1000 keeps %d/%d", c.name, rep.RewrittenDataFiles, n, kx, n, ky, n)
	}
	t.Logf("before: x<1000 keeps %.2f of the files, y<1000 %.2f", before.x, before.y)
	if b := results["binpack"]; b.x < before.x || b.y < before.y {
		t.Errorf("bin-pack improved pruning (%+v vs %+v): the rows were not random", b, before)
	}
	if s := results["sort"]; s.x >= before.x/2 {
		t.Errorf("sort by x keeps %.2f of the files for x<1000 (before %.2f): its leading column did not improve", s.x, before.x)
	}
	if z := results["zorder"]; z.x >= before.x || z.y >= before.y {
		t.Errorf("z-order keeps %+v (before %+v): every z-order column must improve", z, before)
	}
}

// After a sort rewrite, the rows within each output file are in the order,
// nulls and NaN where it says, and every value is kept exactly.
func TestSortRewriteOrdersRowsWithinFiles(t *testing.T) {
	s := newSortTable(t, nil)
	r := rand.New(rand.NewPCG(3, 4))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, -1.5, 1e300}
	for f := range 6 {
		rows := randomRows(r, int64(f*400), 400)
		for i := range rows {
			switch i % 7 {
			case 0:
				rows[i].y = nil
			case 1:
				rows[i].y = ptr(specials[r.IntN(len(specials))])
			case 2:
				rows[i].name = nil
			case 3:
				rows[i].amount, rows[i].ts = nil, nil
			}
		}
		s.appendRows(rows)
	}
	before := allRows(s.files())
	const order = "y ASC NULLS LAST, name DESC"
	res, rep := s.exec.Run(s.ctx, s.job(jobkind.Sort, "defaults: {target_file_size: 8KiB, strategy: sort, sort_order: '"+order+"'}"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	after := s.files()
	if got := allRows(after); !slices.Equal(got, before) {
		t.Fatalf("rows changed: %d before, %d after", len(before), len(got))
	}
	if rep.AddedDataFiles < 2 {
		t.Fatalf("%d output files; the test needs several", rep.AddedDataFiles)
	}
	o, err := sortorder.Parse(order)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := o.Bind(sortSchema())
	if err != nil {
		t.Fatal(err)
	}
	tbl := s.load()
	tasks, err := tbl.Scan().PlanFiles(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		_, recs, err := tbl.Scan().ReadTasks(s.ctx, []table.FileScanTask{task})
		if err != nil {
			t.Fatal(err)
		}
		var prev arrow.RecordBatch
		prevRow := -1
		for rec, err := range recs {
			if err != nil {
				t.Fatal(err)
			}
			for i := range int(rec.NumRows()) {
				if prev != nil && bound.Compare(prev, prevRow, rec, i) > 0 {
					t.Errorf("%s: row %q before %q breaks %s", task.File.FilePath(), renderRow(prev, prevRow), renderRow(rec, i), order)
				}
				prev, prevRow = rec, i
			}
		}
	}
	if snap := tbl.CurrentSnapshot(); snap.Summary.Properties[jobs.SortSnapshotProperty] == "" {
		t.Errorf("sort snapshot lacks %s: %v", jobs.SortSnapshotProperty, snap.Summary.Properties)
	}
}

// A partition larger than max_group_size is sorted as several groups, each
// read into memory on its own, and the report says how many.
func TestSortRespectsMaxGroupSize(t *testing.T) {
	s := newSortTable(t, nil)
	r := rand.New(rand.NewPCG(5, 6))
	var total int64
	for f := range 8 {
		s.appendRows(randomRows(r, int64(f*200), 200))
	}
	tasks, err := s.load().Scan().PlanFiles(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		total += task.File.FileSizeBytes()
	}
	before := allRows(s.files())
	yaml := fmt.Sprintf("defaults: {strategy: sort, sort_order: x, max_group_size: %d}", total/3)
	res, rep := s.exec.Run(s.ctx, s.job(jobkind.Sort, yaml))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
	}
	if rep.Groups < 3 || rep.RewrittenDataFiles != 8 {
		t.Errorf("%d groups over %d files; want at least 3 groups of at most %d bytes over all 8", rep.Groups, rep.RewrittenDataFiles, total/3)
	}
	if got := allRows(s.files()); !slices.Equal(got, before) {
		t.Errorf("rows changed")
	}
}

// Orders that cannot apply are refused with a message naming the problem:
// at configuration time for syntax, at job time for the table's columns.
func TestInvalidSortOrders(t *testing.T) {
	for doc, want := range map[string]string{
		"defaults: {strategy: zorder, sort_order: 'zorder(x)'}":                "2 to 4",
		"defaults: {strategy: zorder, sort_order: 'zorder(a, b, c, d, e)'}":    "2 to 4",
		"defaults: {strategy: sort, sort_order: 'x ASCENDING'}":                "sort_order",
		"defaults: {strategy: zorder, sort_order: 'x, y'}":                     "zorder(c1, c2",
		"defaults: {strategy: sort, sort_order: 'zorder(x, y)'}":               "use strategy zorder",
		"defaults: {strategy: shuffle}":                                        "must be binpack, sort or zorder",
		"tables: [{match: db.t, strategy: sort, sort_order: 'x NULLS LAST,'}]": "tables[0].sort_order",
	} {
		_, err := thresholds.Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", doc, err, want)
		}
	}
	s := newSortTable(t, nil)
	s.appendRows(randomRows(rand.New(rand.NewPCG(7, 8)), 0, 10))
	for order, want := range map[string]string{
		"nosuch DESC":         `"nosuch"`,
		"zorder(x, nosuch)":   `"nosuch"`,
		"attrs":               `"attrs"`,
		"x, name, attrs DESC": `"attrs"`,
	} {
		strategy := "sort"
		if strings.HasPrefix(order, "zorder") {
			strategy = "zorder"
		}
		res, _ := s.exec.Run(s.ctx, s.job(jobkind.Sort, fmt.Sprintf("defaults: {strategy: %s, sort_order: '%s'}", strategy, order)))
		if res.Outcome != jobs.Failed || !errors.Is(res.Err, executor.ErrSortOrder) || !strings.Contains(res.Err.Error(), want) {
			t.Errorf("order %q: outcome %v, err %v; want a failure naming %s", order, res.Outcome, res.Err, want)
		}
	}
	res, _ := s.exec.Run(s.ctx, s.job(jobkind.Sort, "defaults: {strategy: sort}"))
	if res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), "default order") {
		t.Errorf("no sort_order and no table order: %v %v", res.Outcome, res.Err)
	}
}

// A partition whose only file a sort in the same order wrote is not
// rewritten again: the output would be that file. Another order rewrites it.
func TestSortLeavesAFileItSortedAlone(t *testing.T) {
	s := newSortTable(t, nil)
	s.appendRows(randomRows(rand.New(rand.NewPCG(5, 6)), 0, 300))
	yaml := "defaults: {target_file_size: 1MiB, strategy: sort, sort_order: 'y ASC'}"
	if res, _ := s.exec.Run(s.ctx, s.job(jobkind.Sort, yaml)); res.Outcome != jobs.Succeeded {
		t.Fatalf("first sort: outcome %v, err %v", res.Outcome, res.Err)
	}
	res, rep := s.exec.Run(s.ctx, s.job(jobkind.Sort, yaml))
	if res.Outcome != jobs.Noop || rep.Commits != 0 || len(res.NothingToDo) == 0 {
		t.Fatalf("second sort in the same order: outcome %v (err %v), %d commits, nothing-to-do %v; want a no-op",
			res.Outcome, res.Err, rep.Commits, res.NothingToDo)
	}
	other := "defaults: {target_file_size: 1MiB, strategy: sort, sort_order: 'name ASC'}"
	if res, rep := s.exec.Run(s.ctx, s.job(jobkind.Sort, other)); res.Outcome != jobs.Succeeded || rep.Commits != 1 {
		t.Fatalf("sort in another order: outcome %v (err %v), %d commits", res.Outcome, res.Err, rep.Commits)
	}
}
