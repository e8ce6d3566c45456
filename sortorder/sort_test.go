package sortorder

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// checkedCtx returns a context whose Arrow allocations (Sort's take) go to
// a checked allocator, and a cleanup asserting nothing leaked.
func checkedCtx(t *testing.T) (context.Context, *memory.CheckedAllocator) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return compute.WithAllocator(context.Background(), mem), mem
}

// expectedPerm is the reference stable sort of rows in a linear order.
func expectedPerm(t *testing.T, sc *iceberg.Schema, o Order, rows [][]any) []int {
	cols := columnIndexes(t, sc, o)
	perm := make([]int, len(rows))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return refCompareRows(o, cols, rows[a], rows[b]) })
	return perm
}

// checkSorted checks that got holds rows in the order perm: its rowid
// column, and every value of every column bit for bit.
func checkSorted(t *testing.T, got arrow.RecordBatch, rows [][]any, perm []int) {
	t.Helper()
	if int(got.NumRows()) != len(perm) {
		t.Fatalf("sorted batch has %d rows, want %d", got.NumRows(), len(perm))
	}
	for k, p := range perm {
		for c := range got.NumCols() {
			v := valueAt(t, got.Column(int(c)), k)
			if want := rows[p][c]; !sameValue(v, want) {
				t.Fatalf("output row %d column %s = %#v, want %#v (input row %d, rowid %v; got rowid %v)",
					k, got.ColumnName(int(c)), v, want, p, rows[p][0], valueAt(t, got.Column(0), k))
			}
		}
	}
}

func TestSortMatchesReference(t *testing.T) {
	sc := allTypesSchema()
	cols := sortableColumns(sc)
	variants := []struct {
		name         string
		ids, large   bool
		sliceFrom    int
		sliceTo      int
		multiOrders  int
		rows, seed64 int
	}{
		{name: "field ids", ids: true, multiOrders: 60, rows: 700, seed64: 1},
		{name: "names, large types", ids: false, large: true, multiOrders: 20, rows: 500, seed64: 2},
		{name: "sliced batch", ids: true, sliceFrom: 37, sliceTo: 460, multiOrders: 20, rows: 500, seed64: 3},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx, mem := checkedCtx(t)
			rng := rand.New(rand.NewPCG(uint64(v.seed64), 99))
			rows := genRows(rng, sc, v.rows)
			rec := buildRecord(t, mem, arrowSchema(t, sc, v.ids, v.large), rows)
			defer rec.Release()
			if v.sliceTo > 0 {
				sliced := rec.NewSlice(int64(v.sliceFrom), int64(v.sliceTo))
				defer sliced.Release()
				rec, rows = sliced, rows[v.sliceFrom:v.sliceTo]
			}

			var orders []Order
			for _, c := range cols {
				for _, dir := range []bool{false, true} {
					for _, nf := range []bool{false, true} {
						orders = append(orders, Order{Fields: []Field{{Column: c, Descending: dir, NullsFirst: nf}}})
					}
				}
			}
			for range v.multiOrders {
				var o Order
				for _, k := range rng.Perm(len(cols))[:2+rng.IntN(3)] {
					o.Fields = append(o.Fields, Field{Column: cols[k], Descending: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0})
				}
				orders = append(orders, o)
			}
			for _, o := range orders {
				bound, err := o.Bind(sc)
				if err != nil {
					t.Fatalf("Bind(%s): %v", o, err)
				}
				got, err := bound.Sort(ctx, rec)
				if err != nil {
					t.Fatalf("Sort(%s): %v", o, err)
				}
				t.Run(o.String(), func(t *testing.T) {
					checkSorted(t, got, rows, expectedPerm(t, sc, o, rows))
					// Compare agrees with the reference on random pairs,
					// equal keys included.
					cix := columnIndexes(t, sc, o)
					for range 200 {
						i, j := rng.IntN(len(rows)), rng.IntN(len(rows))
						want := refCompareRows(o, cix, rows[i], rows[j])
						if c := bound.Compare(rec, i, rec, j); c != want {
							t.Fatalf("Compare(rows %d, %d) = %d, want %d (%v vs %v)", i, j, c, want, rows[i], rows[j])
						}
					}
				})
				got.Release()
			}
		})
	}
}

// Keys must compare the same whichever Arrow type holds the column:
// iceberg-go may hand a long column's old files over as int32, and string
// columns as string or large_string.
func TestKeysIndependentOfArrowWidth(t *testing.T) {
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 3, Name: "s", Type: iceberg.PrimitiveTypes.String})
	narrow := arrow.NewSchema([]arrow.Field{
		{Name: "l", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	}, nil)
	wide := arrowSchema(t, sc, false, false)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(5, 5))
	var nrows, wrows [][]any
	for range 300 {
		var n, w []any
		if rng.IntN(5) > 0 {
			v := pick(rng, int32Specials, func() int32 { return int32(rng.IntN(100) - 50) })
			n, w = append(n, v), append(w, int64(v))
		} else {
			n, w = append(n, nil), append(w, nil)
		}
		if rng.IntN(5) > 0 {
			v := pick(rng, float32Specials, func() float32 { return float32(rng.IntN(7) - 3) })
			n, w = append(n, v), append(w, float64(v))
		} else {
			n, w = append(n, nil), append(w, nil)
		}
		s := pick(rng, stringSpecials, func() string { return fmt.Sprint(rng.IntN(9)) })
		n, w = append(n, s), append(w, s)
		nrows, wrows = append(nrows, n), append(wrows, w)
	}
	nrec := buildRecord(t, mem, narrow, nrows)
	defer nrec.Release()
	wrec := buildRecord(t, mem, wide, wrows)
	defer wrec.Release()
	for _, spec := range []string{"l DESC, d, s", "d DESC NULLS FIRST, s DESC", "s, l NULLS LAST", "zorder(l, d, s)"} {
		o, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		bound, err := o.Bind(sc)
		if err != nil {
			t.Fatal(err)
		}
		for range 500 {
			i, j := rng.IntN(300), rng.IntN(300)
			if a, b := bound.Compare(nrec, i, wrec, j), bound.Compare(wrec, i, wrec, j); a != b {
				t.Fatalf("%s: rows %d, %d: %d across Arrow widths, %d within one", spec, i, j, a, b)
			}
		}
	}
}

func TestSortSmallAndSortedBatches(t *testing.T) {
	ctx, mem := checkedCtx(t)
	sc := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64})
	as := arrowSchema(t, sc, true, false)
	bound, err := Order{Fields: []Field{asc("a")}}.Bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range [][][]any{{}, {{int64(3)}}, {{nil}, {int64(1)}, {int64(2)}, {int64(2)}}} {
		rec := buildRecord(t, mem, as, rows)
		got, err := bound.Sort(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		// Already in order: no copy is made.
		if got != rec {
			t.Errorf("%d sorted rows were copied", len(rows))
		}
		got.Release()
		rec.Release()
	}
	rec := buildRecord(t, mem, as, [][]any{{int64(2)}, {int64(1)}})
	defer rec.Release()
	got, err := bound.Sort(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got == rec || valueAt(t, got.Column(0), 0) != int64(1) {
		t.Errorf("unsorted batch came back as %v", got)
	}
}

func TestSortCanceled(t *testing.T) {
	sc := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64})
	rec := buildRecord(t, memory.NewGoAllocator(), arrowSchema(t, sc, true, false), [][]any{{int64(2)}, {int64(1)}})
	defer rec.Release()
	bound, err := Order{Fields: []Field{asc("a")}}.Bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := bound.Sort(ctx, rec); err == nil {
		got.Release()
		t.Fatal("Sort with a canceled context succeeded")
	}
}

// Batches are read by field id when they carry ids (whatever the names),
// else by name; Arrow types a column cannot be read from are errors.
func TestSortBatchColumns(t *testing.T) {
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "dec", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 4, Name: "fx", Type: iceberg.FixedTypeOf(4)},
		iceberg.NestedField{ID: 5, Name: "s", Type: iceberg.PrimitiveTypes.String})
	withID := func(name string, id int, dt arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true, Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{fmt.Sprint(id)})}
	}
	tests := []struct {
		name   string
		order  string
		fields []arrow.Field
		want   string // error substring; "" for success
	}{
		{"renamed column found by id", "a", []arrow.Field{withID("renamed", 1, arrow.PrimitiveTypes.Int64)}, ""},
		{"same name other id", "a", []arrow.Field{withID("a", 9, arrow.PrimitiveTypes.Int64)},
			`sort column "a": no batch column with its field id 1 (batch columns: a)`},
		{"by name", "a", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, ""},
		{"missing by name", "a", []arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Int64}},
			`sort column "a": no batch column with its name (batch columns: b)`},
		{"long from int32", "a", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, ""},
		{"long from uint32", "a", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Uint32}}, ""},
		{"long from int8", "a", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int8}}, ""},
		{"long from uint64", "a", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Uint64}},
			`sort column "a" (long) holds Arrow type uint64, which cannot be read as long`},
		{"long from float", "a", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Float64}},
			`sort column "a" (long) holds Arrow type float64, which cannot be read as long`},
		{"timestamptz in ms", "ts", []arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}}},
			`sort column "ts" (timestamptz) holds Arrow type timestamp[ms, tz=UTC], which cannot be read as timestamptz`},
		{"timestamptz without zone", "ts", []arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}}, ""},
		{"decimal of another scale", "dec", []arrow.Field{{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 3}}},
			`sort column "dec" (decimal(10, 2)) holds Arrow decimal(10, 3): scale 3, not the schema's 2`},
		{"decimal64", "dec", []arrow.Field{{Name: "dec", Type: &arrow.Decimal64Type{Precision: 10, Scale: 2}}}, ""},
		{"fixed of another width", "fx", []arrow.Field{{Name: "fx", Type: &arrow.FixedSizeBinaryType{ByteWidth: 5}}},
			`sort column "fx" (fixed[4]) holds Arrow type fixed_size_binary[5]`},
		{"dictionary strings", "s", []arrow.Field{{Name: "s", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}}},
			`sort column "s" (string) holds Arrow type dictionary<values=utf8, indices=int32, ordered=false>`},
		{"string view", "s", []arrow.Field{{Name: "s", Type: arrow.BinaryTypes.StringView}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse(tt.order)
			if err != nil {
				t.Fatal(err)
			}
			bound, err := o.Bind(sc)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			as := arrow.NewSchema(tt.fields, nil)
			cols := make([]arrow.Array, len(tt.fields))
			for i, f := range tt.fields {
				cols[i] = array.MakeArrayOfNull(mem, f.Type, 3)
				defer cols[i].Release()
			}
			rec := array.NewRecordBatch(as, cols, 3)
			defer rec.Release()
			got, err := bound.Sort(context.Background(), rec)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Sort: %v", err)
				}
				got.Release()
				return
			}
			if err == nil {
				got.Release()
				t.Fatalf("Sort succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Sort error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// Spot checks of the linear encoding the package doc promises, so a
// change to it is a deliberate one.
func TestLinearKeyLayout(t *testing.T) {
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), [][]any{{int32(-2), "a\x00b"}, {nil, nil}})
	defer rec.Release()
	tests := []struct {
		order string
		row   int
		want  []byte
	}{
		{"i, s", 0, []byte{0x01, 0x7F, 0xFF, 0xFF, 0xFE, 0x01, 'a', 0x00, 0xFF, 'b', 0x00, 0x00}},
		{"i DESC, s DESC", 0, []byte{0x01, 0x80, 0x00, 0x00, 0x01, 0x01, ^byte('a'), 0xFF, 0x00, ^byte('b'), 0xFF, 0xFF}},
		{"i NULLS FIRST, s NULLS LAST", 1, []byte{0x00, 0, 0, 0, 0, 0x02}},
		{"i DESC NULLS FIRST, s DESC", 1, []byte{0x00, 0, 0, 0, 0, 0x02}},
	}
	for _, tt := range tests {
		o, err := Parse(tt.order)
		if err != nil {
			t.Fatal(err)
		}
		bound, err := o.Bind(sc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bound.AppendKey(nil, rec, tt.row)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(tt.want) {
			t.Errorf("%s row %d: key % x, want % x", tt.order, tt.row, got, tt.want)
		}
	}
}

func TestZeroBoundAndRowRange(t *testing.T) {
	sc := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), [][]any{{int64(2)}, {int64(1)}})
	defer rec.Release()
	if got, err := (Bound{}).Sort(context.Background(), rec); err == nil || !strings.Contains(err.Error(), "zero Bound") {
		if got != nil {
			got.Release()
		}
		t.Errorf("Sort on a zero Bound: %v", err)
	}
	bound, err := Order{Fields: []Field{asc("a")}}.Bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{-1, 2} {
		if _, err := bound.AppendKey(nil, rec, i); err == nil || !strings.Contains(err.Error(), "out of range for a batch of 2 rows") {
			t.Errorf("AppendKey(row %d): %v", i, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Compare on a batch without the column did not panic")
		}
	}()
	other := buildRecord(t, mem, arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil), [][]any{{int64(1)}})
	defer other.Release()
	bound.Compare(rec, 0, other, 0)
}

// A Bound is shared by concurrent sorts (run with -race).
func TestSortConcurrent(t *testing.T) {
	ctx, mem := checkedCtx(t)
	sc := allTypesSchema()
	rows := genRows(rand.New(rand.NewPCG(8, 8)), sc, 300)
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	for _, spec := range []string{"s DESC, d, u", "zorder(l, s, dec, f)"} {
		o, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		bound, err := o.Bind(sc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := bound.Sort(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for g := range errs {
			wg.Go(func() {
				got, err := bound.Sort(ctx, rec)
				if err != nil {
					errs[g] = err
					return
				}
				defer got.Release()
				// Same permutation (RecordEqual would fail on NaN != NaN).
				if !array.Equal(got.Column(0), want.Column(0)) {
					errs[g] = fmt.Errorf("%s: concurrent sort %d differs", spec, g)
				}
			})
		}
		wg.Wait()
		want.Release()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	}
}
