package executor_test

import (
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/sortorder"
)

// spillingExecutor is an executor on s's catalog whose sorts spill as soon
// as a group holds more than a third of budget bytes of rows.
func spillingExecutor(t *testing.T, s *sortTable, budget int64, dir string) *executor.Executor {
	t.Helper()
	e := newExecutor(t, executor.Options{Catalog: s.cat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: metrics.New(), Concurrency: 2, SortMemory: budget, SpillDir: dir})
	executor.PoisonFreedBuffers(e)
	return e
}

// sortInput fills s with files rows of partition a, with nulls and special
// floats among them.
func sortInput(s *sortTable, seed uint64, files, rows int) {
	r := rand.New(rand.NewPCG(seed, 77))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
	for f := range files {
		batch := randomRows(r, int64(f*rows), rows)
		for i := range batch {
			switch i % 9 {
			case 0:
				batch[i].y = nil
			case 1:
				batch[i].y = ptr(specials[r.IntN(len(specials))])
			case 2:
				batch[i].name, batch[i].x = nil, nil
			}
			if i%5 == 0 {
				batch[i].x = ptr(int64(r.IntN(20))) // ties
			}
		}
		s.appendRows(batch)
	}
}

// orderedFiles are s's live files' rows, files in the order of their rows.
func orderedFiles(s *sortTable) [][]string {
	var out [][]string
	for _, rows := range s.files() {
		out = append(out, rows)
	}
	// Files are consecutive ranges of the order; their first rows (unique
	// ids) tell the sequence only through the order itself, so compare as
	// sets of files.
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}

// The external merge sort writes what the in-memory sort writes, for a
// partition that fits in memory: the same files holding the same rows in
// the same order, linear orders and z-orders alike (the z-order's sample
// holds every row, so its quantiles are the in-memory sort's), with more
// runs than are merged at once.
func TestExternalSortWritesWhatInMemorySortWrites(t *testing.T) {
	// The input files' order (hence how ties fall) depends on their random
	// names: the orders end with a unique column.
	for _, order := range []string{"y ASC NULLS LAST, name DESC, id", "x DESC NULLS FIRST, id DESC", "zorder(x, y, id)"} {
		t.Run(order, func(t *testing.T) {
			strategy := "sort"
			if order[0] == 'z' {
				strategy = "zorder"
			}
			yaml := "defaults: {target_file_size: 24KiB, strategy: " + strategy + ", sort_order: '" + order + "'}"
			mem := newSortTable(t, nil)
			ext := newSortTable(t, nil)
			sortInput(mem, 11, 8, 300)
			sortInput(ext, 11, 8, 300)
			before := allRows(mem.files())
			if got := allRows(ext.files()); !slices.Equal(got, before) {
				t.Fatal("the two tables differ before the sort")
			}
			res, memRep := mem.exec.Run(mem.ctx, mem.job(jobkind.Sort, yaml))
			if res.Outcome != jobs.Succeeded || memRep.SpilledRuns != 0 {
				t.Fatalf("in-memory sort: %v %v, %d runs spilled", res.Outcome, res.Err, memRep.SpilledRuns)
			}
			spill := t.TempDir()
			e := spillingExecutor(t, ext, 6<<10, spill)
			res, extRep := e.Run(ext.ctx, ext.job(jobkind.Sort, yaml))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("external sort: %v %v", res.Outcome, res.Err)
			}
			if extRep.SpilledRuns <= 64 {
				t.Fatalf("external sort spilled %d runs; the test needs more than are merged at once", extRep.SpilledRuns)
			}
			if memRep.AddedDataFiles < 2 || memRep.AddedDataFiles != extRep.AddedDataFiles {
				t.Fatalf("files: in memory %d, external %d (want several, the same)", memRep.AddedDataFiles, extRep.AddedDataFiles)
			}
			a, b := orderedFiles(mem), orderedFiles(ext)
			if !slices.EqualFunc(a, b, slices.Equal[[]string]) {
				for i := range min(len(a), len(b)) {
					if !slices.Equal(a[i], b[i]) {
						j := 0
						for j < min(len(a[i]), len(b[i])) && a[i][j] == b[i][j] {
							j++
						}
						t.Logf("file %d: %d vs %d rows, first difference at row %d", i, len(a[i]), len(b[i]), j)
						if j < min(len(a[i]), len(b[i])) {
							t.Logf("  in memory %s\n  external  %s", a[i][j], b[i][j])
						}
					}
				}
				t.Fatalf("the external sort's files differ from the in-memory sort's")
			}
			if got := allRows(ext.files()); !slices.Equal(got, before) {
				t.Fatal("the external sort changed the rows")
			}
			left, err := os.ReadDir(spill)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Fatalf("the spill directory holds %d entries after the sort", len(left))
			}
		})
	}
}

// A partition many times larger than its sort budget, with deletes to
// apply, is sorted with every output file in order, the files consecutive
// ranges of the order, and every surviving row exactly once.
func TestExternalSortOfPartitionLargerThanBudget(t *testing.T) {
	s := newSortTable(t, iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	sortInput(s, 21, 12, 500)
	tbl := s.load()
	txn := tbl.NewTransaction()
	if err := txn.Delete(s.ctx, iceberg.LessThan(iceberg.Reference("id"), int64(700)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(s.ctx); err != nil {
		t.Fatal(err)
	}
	before := allRows(s.files())
	if len(before) != 12*500-700 {
		t.Fatalf("%d rows after the delete, want %d", len(before), 12*500-700)
	}
	const order = "name ASC NULLS LAST, y DESC"
	spill := t.TempDir()
	e := spillingExecutor(t, s, 32<<10, spill)
	res, rep := e.Run(s.ctx, s.job(jobkind.Sort, "defaults: {target_file_size: 64KiB, strategy: sort, sort_order: '"+order+"'}"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("external sort: %v %v", res.Outcome, res.Err)
	}
	if rep.SpilledRuns < 20 || rep.AddedDataFiles < 3 {
		t.Fatalf("%d runs spilled, %d files: the test needs a partition many times its budget and several files", rep.SpilledRuns, rep.AddedDataFiles)
	}
	if got := allRows(s.files()); !slices.Equal(got, before) {
		t.Fatalf("rows changed: %d before, %d after", len(before), len(got))
	}
	o, err := sortorder.Parse(order)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := o.Bind(sortSchema())
	if err != nil {
		t.Fatal(err)
	}
	// Each file in order, and the files, by their first rows, one after
	// the other: the last row of one is not after the first of the next.
	type span struct{ first, last arrow.RecordBatch }
	var spans []span
	tbl = s.load()
	tasks, err := tbl.Scan().PlanFiles(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		_, recs, err := tbl.Scan().ReadTasks(s.ctx, []table.FileScanTask{task})
		if err != nil {
			t.Fatal(err)
		}
		var all []arrow.RecordBatch
		for rec, err := range recs {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, rec)
		}
		var prev arrow.RecordBatch
		prevRow := -1
		for _, rec := range all {
			for i := range int(rec.NumRows()) {
				if prev != nil && bound.Compare(prev, prevRow, rec, i) > 0 {
					t.Fatalf("%s: row %q before %q", task.File.FilePath(), renderRow(prev, prevRow), renderRow(rec, i))
				}
				prev, prevRow = rec, i
			}
		}
		first := all[0].NewSlice(0, 1)
		last := prev.NewSlice(int64(prevRow), int64(prevRow)+1)
		spans = append(spans, span{first, last})
	}
	slices.SortFunc(spans, func(a, b span) int { return bound.Compare(a.first, 0, b.first, 0) })
	for i := 1; i < len(spans); i++ {
		if bound.Compare(spans[i-1].last, 0, spans[i].first, 0) > 0 {
			t.Fatalf("file %d ends after file %d begins", i-1, i)
		}
	}
	left, err := os.ReadDir(spill)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("the spill directory holds %d entries after the sort", len(left))
	}
}

// A spill directory that cannot be used is refused at configuration, and a
// sort whose spill fails leaves the table and the data directory as they
// were.
func TestSpillDirectoryFailures(t *testing.T) {
	s := newSortTable(t, nil)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"relative/spill", filepath.Join(file, "spill")} {
		if _, err := executor.New(executor.Options{Catalog: s.cat, Logger: slog.New(slog.DiscardHandler),
			SortMemory: 1 << 20, SpillDir: dir}); err == nil {
			t.Errorf("spill_dir %q accepted", dir)
		}
	}
	sortInput(s, 31, 6, 300)
	before := s.files()
	// The directory was fine at start and is gone by the time the sort
	// spills (a file in its place).
	dir := filepath.Join(t.TempDir(), "spill")
	ext := spillingExecutor(t, s, 6<<10, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dataFiles := func() int {
		n := 0
		_ = filepath.WalkDir(strings.TrimPrefix(s.load().Location(), "file://"), func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".parquet") {
				n++
			}
			return err
		})
		return n
	}
	onDisk := dataFiles()
	res, _ := ext.Run(s.ctx, s.job(jobkind.Sort, "defaults: {target_file_size: 24KiB, strategy: sort, sort_order: 'x'}"))
	if res.Outcome != jobs.Failed {
		t.Fatalf("sort with an unwritable spill directory: %v", res.Outcome)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "spill directory") {
		t.Errorf("error %v: want it to name the spill directory", res.Err)
	}
	after := s.files()
	if len(after) != len(before) || dataFiles() != onDisk {
		t.Fatalf("%d files after the failed sort, %d before; %d Parquet files on disk, %d before", len(after), len(before), dataFiles(), onDisk)
	}
}
