package executor_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// Each case builds a table, converts partition a, and checks the rows read
// the same, the counts, and that no equality delete is left in a.
func TestConvertEqualityDeletes(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		// want: rows matched, data files scanned, equality files removed,
		// position files added.
		matched                 int64
		scanned, removed, added int
	}{
		{name: "ids across two data files", matched: 3, scanned: 2, removed: 1, added: 1, setup: func(t *testing.T, f *fixture) {
			f.commit("a", 10) // 1..10
			f.commit("a", 10) // 11..20
			eqDelete(t, f, []int{1}, idKeys("a", 3, 12, 19)...)
		}},
		{name: "a key deleted twice", matched: 2, scanned: 1, removed: 2, added: 1, setup: func(t *testing.T, f *fixture) {
			f.commit("a", 10)
			eqDelete(t, f, []int{1}, idKeys("a", 4)...)
			eqDelete(t, f, []int{1}, idKeys("a", 4, 5)...)
		}},
		{name: "keys matching nothing", matched: 0, scanned: 1, removed: 1, added: 0, setup: func(t *testing.T, f *fixture) {
			f.commit("a", 10)
			f.commit("b", 10) // 11..20, another partition
			eqDelete(t, f, []int{1}, idKeys("a", 15, 99)...)
		}},
		{name: "delete older than the data it names", matched: 1, scanned: 1, removed: 1, added: 1, setup: func(t *testing.T, f *fixture) {
			f.commit("a", 10)
			eqDelete(t, f, []int{1}, idKeys("a", 2, 11)...) // 11 is written next, at a higher sequence number
			f.commit("a", 10)
		}},
		{name: "two equality fields", matched: 1, scanned: 1, removed: 1, added: 1, setup: func(t *testing.T, f *fixture) {
			f.commit("a", 10)
			eqDelete(t, f, []int{1, 3}, eqKey{"a", 6, streamwriter.Payload(6)}, eqKey{"a", 7, "not its payload"})
		}},
		{name: "the partition column: every older row", matched: 10, scanned: 1, removed: 1, added: 1, setup: func(t *testing.T, f *fixture) {
			f.commit("a", 10)
			eqDelete(t, f, []int{2}, eqKey{category: "a"})
			f.commit("a", 5)
		}},
		{name: "position deletes already there", matched: 2, scanned: 1, removed: 1, added: 1, setup: func(t *testing.T, f *fixture) {
			f.commit("a", 10)
			mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, 3) })
			eqDelete(t, f, []int{1}, idKeys("a", 3, 4)...)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, streamwriter.MergeOnReadProperties)
			tc.setup(t, f)
			f.commit("b", 5)
			eqDelete(t, f, []int{1}, idKeys("b", 1000)...) // b is not converted
			before := f.contents()
			res, rep := f.exec.Run(f.ctx, convJob(f, "a"))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
			}
			sameContents(t, "after conversion", before, f.contents())
			c := rep.Conversion
			if c.RowsMatched != tc.matched || c.DataFilesScanned != tc.scanned || c.EqualityDeleteFilesRemoved != tc.removed ||
				c.PositionDeleteFilesAdded != tc.added {
				t.Errorf("counts %+v; want matched %d, scanned %d, removed %d, added %d", c, tc.matched, tc.scanned, tc.removed, tc.added)
			}
			if c.BytesRead <= 0 {
				t.Errorf("bytes read %d", c.BytesRead)
			}
			if n := eqDeleteFiles(t, f, "a"); n != 0 {
				t.Errorf("%d equality delete files left in a", n)
			}
			if n := eqDeleteFiles(t, f, "b"); n != 1 {
				t.Errorf("partition b has %d equality delete files, want its 1", n)
			}
			res, rep = f.exec.Run(f.ctx, convJob(f, "a"))
			if res.Outcome != jobs.Noop || rep.Conversion.RowsMatched != 0 {
				t.Errorf("second conversion: outcome %v (%v), %+v; want a no-op", res.Outcome, res.Err, rep.Conversion)
			}
			// A compaction applying the position deletes keeps the rows too.
			res, _ = f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 1, min_input_files: 1}", "a")))
			if res.Outcome == jobs.Failed {
				t.Fatalf("compaction after conversion: %v", res.Err)
			}
			sameContents(t, "after compaction", before, f.contents())
		})
	}
}

// A dry run reads and counts, and changes nothing.
func TestConvertEqualityDeletesDryRun(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("a", 10)
	eqDelete(t, f, []int{1}, idKeys("a", 1, 2)...)
	snap := f.load().CurrentSnapshot().SnapshotID
	job := convJob(f, "a")
	job.DryRun = true
	res, rep := f.exec.Run(f.ctx, job)
	if res.Outcome != jobs.Succeeded || !rep.DryRun || rep.Conversion.RowsMatched != 2 || rep.Conversion.EqualityDeleteFilesRemoved != 1 {
		t.Fatalf("outcome %v (%v), %+v", res.Outcome, res.Err, rep.Conversion)
	}
	if got := f.load().CurrentSnapshot().SnapshotID; got != snap {
		t.Errorf("dry run committed snapshot %d", got)
	}
	if out := convertedOnDisk(t, f); len(out) != 0 {
		t.Errorf("dry run wrote %v", out)
	}
}

// Random tables: partitions, equality deletes on one or two fields,
// deletes older and newer than the data, keys deleted twice or matching
// nothing, position deletes. After converting some partitions the table
// reads exactly what it read, no equality delete is left there, and a
// second conversion finds nothing to do.
func TestConvertEqualityDeletesProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	categories := []string{"a", "b", "c"}
	for round := range 6 {
		f := newFixture(t, streamwriter.MergeOnReadProperties)
		var next int64 = 1
		written := map[string][]int64{}
		for range 10 + rng.IntN(10) {
			cat := categories[rng.IntN(len(categories))]
			id := func() int64 {
				if ids := written[cat]; len(ids) > 0 && rng.IntN(4) > 0 {
					return ids[rng.IntN(len(ids))] // mostly a row of the partition, maybe deleted already
				}
				return 1 + rng.Int64N(next+5) // else any id, past the last too: a delete older than its row
			}
			switch op := rng.IntN(6); {
			case op <= 1 || next == 1:
				n := 1 + rng.IntN(20)
				f.commit(cat, n)
				for i := range int64(n) {
					written[cat] = append(written[cat], next+i)
				}
				next += int64(n)
			case op == 2:
				var keys []eqKey
				for range 1 + rng.IntN(5) {
					keys = append(keys, idKeys(cat, id())...)
				}
				eqDelete(t, f, []int{1}, keys...)
			case op == 3:
				var keys []eqKey
				for range 1 + rng.IntN(4) {
					k := idKeys(cat, id())[0]
					if rng.IntN(3) == 0 {
						k.payload = "no such payload"
					}
					keys = append(keys, k)
				}
				eqDelete(t, f, []int{1, 3}, keys...)
			case op == 4:
				k := idKeys(cat, id())[0]
				eqDelete(t, f, []int{3}, k, k) // the same key twice in one file
			default:
				mustDelete(t, func() (int64, error) { return f.writer.DeleteRows(f.ctx, id(), id()) })
			}
		}
		convert := []string{"a", "b", "c"}[:1+rng.IntN(3)]
		before := f.contents()
		res, rep := f.exec.Run(f.ctx, convJob(f, convert...))
		if res.Outcome != jobs.Succeeded && res.Outcome != jobs.Noop {
			t.Fatalf("round %d: outcome %v, err %v", round, res.Outcome, res.Err)
		}
		sameContents(t, "after conversion", before, f.contents())
		if n := eqDeleteFiles(t, f, convert...); n != 0 {
			t.Errorf("round %d: %d equality delete files left in %v", round, n, convert)
		}
		res, again := f.exec.Run(f.ctx, convJob(f, convert...))
		if res.Outcome != jobs.Noop {
			t.Errorf("round %d: second conversion %v (%v), %+v", round, res.Outcome, res.Err, again.Conversion)
		}
		t.Logf("round %d: converted %v: %+v", round, convert, rep.Conversion)
	}
}

// A writer committing new data and new equality deletes during the
// conversion costs a retry; its rows and deletes stay as they are.
func TestConvertEqualityDeletesConcurrentWriter(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("a", 10) // 1..10
	f.commit("a", 10) // 11..20
	mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 2, 13) })
	f.icat.beforeNextCommits(func() {
		f.commit("a", 10) // 21..30
		mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 5, 25) })
	})
	res, rep := f.exec.Run(f.ctx, convJob(f, "a"))
	if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (%v), conflicts %d; want success after one conflict", res.Outcome, res.Err, rep.Conflicts)
	}
	got := f.contents()
	if got.Total != f.writer.Written() {
		t.Errorf("table %v, writer %v", got.Total, f.writer.Written())
	}
	for _, id := range []int64{2, 5, 13, 25} {
		if got.IDs[id] != 0 {
			t.Errorf("deleted id %d is visible", id)
		}
	}
	if n := eqDeleteFiles(t, f, "a"); n != 1 {
		t.Errorf("%d equality delete files in a, want the writer's new one", n)
	}
	if rep.Conversion.RowsMatched != 2 {
		t.Errorf("matched %d rows, want 2", rep.Conversion.RowsMatched)
	}
}

// A compaction rewriting a scanned file during the conversion makes it
// plan again on the compacted files: its first outputs are deleted, no row
// changes, and no equality delete is left.
func TestConvertEqualityDeletesConcurrentCompaction(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 3 {
		f.commit("a", 10)
	}
	mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 4, 15, 26) })
	before := f.contents()
	other := newExecutorOn(f, f.cat)
	f.icat.beforeNextCommits(func() {
		res, _ := other.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 2, min_input_files: 2}", "a"))
		if res.Outcome != jobs.Succeeded {
			t.Errorf("concurrent compaction: %v (%v)", res.Outcome, res.Err)
		}
	})
	res, rep := f.exec.Run(f.ctx, convJob(f, "a"))
	// The compaction also removed the deletes it left applying to nothing,
	// so the second plan may find nothing to convert.
	if (res.Outcome != jobs.Succeeded && res.Outcome != jobs.Noop) || rep.Conversion.Replans != 1 || rep.OutputFilesCleanedUp != 1 {
		t.Fatalf("outcome %v (%v), %d replans, %d outputs cleaned up; want one replan that deleted the first output",
			res.Outcome, res.Err, rep.Conversion.Replans, rep.OutputFilesCleanedUp)
	}
	sameContents(t, "after the conversion", before, f.contents())
	if n := eqDeleteFiles(t, f, "a"); n != 0 {
		t.Errorf("%d equality delete files left", n)
	}
	if out := convertedOnDisk(t, f); len(out) > rep.Conversion.PositionDeleteFilesAdded {
		t.Errorf("conversion files on disk %v, %d committed", out, rep.Conversion.PositionDeleteFilesAdded)
	}
}

// A partition compacted at every attempt, with a new equality delete each
// time: the conversion gives up cleanly after its replans with
// ErrInputsGone, and the rows are exact.
func TestConvertEqualityDeletesCompactedEveryTime(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 2 {
		f.commit("a", 10)
	}
	mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, 4, 15) })
	other := newExecutorOn(f, f.cat)
	compact := func() {
		f.commit("a", 10) // something new to compact with the rewritten file
		res, _ := other.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 2, min_input_files: 2}", "a"))
		if res.Outcome != jobs.Succeeded {
			t.Errorf("concurrent compaction: %v (%v)", res.Outcome, res.Err)
		}
		live := f.writer.LiveIDs()
		mustDelete(t, func() (int64, error) { return f.writer.DeleteKeys(f.ctx, live[len(live)-1]) })
	}
	f.icat.beforeNextCommits(compact, compact, compact)
	res, _ := f.exec.Run(f.ctx, convJob(f, "a"))
	if res.Outcome != jobs.Failed || !errors.Is(res.Err, executor.ErrInputsGone) {
		t.Fatalf("outcome %v, err %v; want ErrInputsGone after the replans", res.Outcome, res.Err)
	}
	if got := f.contents(); got.Total != f.writer.Written() {
		t.Errorf("table %v, writer %v", got.Total, f.writer.Written())
	}
	if out := convertedOnDisk(t, f); len(out) != 0 {
		t.Errorf("abandoned conversion left %v", out)
	}
}

// An equality delete on a field the data files lack is refused, and the
// table is left as it was.
func TestConvertEqualityDeletesFieldMissing(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("a", 10)
	txn := f.load().NewTransaction()
	if err := txn.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Int64, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	extra, ok := f.load().Schema().FindFieldByName("extra")
	if !ok {
		t.Fatal("no extra column")
	}
	writeEqDeleteFile(t, f, "a", []int{extra.ID}, &arrow.Field{Name: "extra", Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder) {
		b.(*array.Int64Builder).Append(7)
	})
	snap := f.load().CurrentSnapshot().SnapshotID
	res, _ := f.exec.Run(f.ctx, convJob(f, "a"))
	if res.Outcome != jobs.Failed || !errors.Is(res.Err, executor.ErrEqualityFieldMissing) {
		t.Fatalf("outcome %v, err %v; want ErrEqualityFieldMissing", res.Outcome, res.Err)
	}
	if got := f.load().CurrentSnapshot().SnapshotID; got != snap {
		t.Errorf("table changed: snapshot %d -> %d", snap, got)
	}
	if out := convertedOnDisk(t, f); len(out) != 0 {
		t.Errorf("refused conversion wrote %v", out)
	}
}

// An equality delete whose id column is a string, against long ids, is
// refused, and the table is left as it was.
func TestConvertEqualityDeletesTypeMismatch(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	f.commit("a", 10)
	writeEqDeleteFile(t, f, "a", []int{1}, &arrow.Field{Name: "id", Type: arrow.BinaryTypes.String}, func(b array.Builder) {
		b.(*array.StringBuilder).Append("7")
	})
	snap := f.load().CurrentSnapshot().SnapshotID
	res, _ := f.exec.Run(f.ctx, convJob(f, "a"))
	if res.Outcome != jobs.Failed || !errors.Is(res.Err, executor.ErrEqualityTypeMismatch) {
		t.Fatalf("outcome %v, err %v; want ErrEqualityTypeMismatch", res.Outcome, res.Err)
	}
	if got := f.load().CurrentSnapshot().SnapshotID; got != snap {
		t.Errorf("table changed: snapshot %d -> %d", snap, got)
	}
}

// writeEqDeleteFile writes, by hand, an equality delete file of one row in
// partition category whose single column is col with field id ids[0], and
// commits it: what a foreign writer with its own idea of the schema leaves.
func writeEqDeleteFile(t *testing.T, f *fixture, category string, ids []int, col *arrow.Field, value func(array.Builder)) {
	t.Helper()
	tbl := f.load()
	col.Metadata = arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{itoa(ids[0])})
	sc := arrow.NewSchema([]arrow.Field{*col}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	value(b.Field(0))
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := tbl.Location() + "/data/category=" + category + "/foreign-eq-deletes.parquet"
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fs.(iceio.WriteFileIO).Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, out, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(trimFileScheme(path))
	if err != nil {
		t.Fatal(err)
	}
	bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentEqDeletes, path, iceberg.ParquetFile,
		map[int]any{1000: category}, nil, nil, 1, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(nil).AddDeletes(bld.EqualityFieldIDs(ids).Build()).Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
}
