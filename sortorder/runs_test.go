package sortorder

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// mergeRuns merges sorted runs by their keys, ties to the earlier run, and
// returns the merged rows as (run, row) pairs.
func mergeRuns(keys []*array.Binary) [][2]int {
	pos := make([]int, len(keys))
	var out [][2]int
	for {
		best := -1
		for r, k := range keys {
			if pos[r] == k.Len() {
				continue
			}
			if best < 0 || bytes.Compare(k.Value(pos[r]), keys[best].Value(pos[best])) < 0 {
				best = r
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, [2]int{best, pos[best]})
		pos[best]++
	}
}

// Sorting a batch in runs and merging them by their keys gives exactly
// the rows Sort gives for the whole batch, in the same order: linear orders
// of every type and direction, and z-orders whose quantiles come from a
// sample holding every row.
func TestRunsMergeToSort(t *testing.T) {
	sc := allTypesSchema()
	cols := sortableColumns(sc)
	ctx, mem := checkedCtx(t)
	rng := rand.New(rand.NewPCG(5, 55))
	rows := genRows(rng, sc, 900)
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	var orders []Order
	for _, c := range cols {
		orders = append(orders, Order{Fields: []Field{{Column: c, Descending: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0}}})
	}
	for range 10 {
		var o Order
		for _, k := range rng.Perm(len(cols))[:2+rng.IntN(2)] {
			o.Fields = append(o.Fields, Field{Column: cols[k], Descending: rng.IntN(2) == 0})
		}
		orders = append(orders, o)
	}
	for _, pair := range [][2]string{{"l", "d"}, {"s", "i"}, {"ts", "dec"}} {
		orders = append(orders, Order{ZOrder: true, Fields: []Field{{Column: pair[0]}, {Column: pair[1]}}})
	}
	for _, o := range orders {
		t.Run(o.String(), func(t *testing.T) {
			bound, err := o.Bind(sc)
			if err != nil {
				t.Fatal(err)
			}
			want, err := bound.Sort(ctx, rec)
			if err != nil {
				t.Fatal(err)
			}
			defer want.Release()
			var q *Quantiles
			if o.ZOrder {
				s := bound.NewSampler(len(rows))
				for _, cut := range [][2]int64{{0, 300}, {300, 900}} {
					part := rec.NewSlice(cut[0], cut[1])
					if err := s.Add(part); err != nil {
						t.Fatal(err)
					}
					part.Release()
				}
				if !s.Exact() {
					t.Fatal("a sample with room for every row is not exact")
				}
				q = s.Quantiles()
			}
			cuts := []int64{0, 250, 251, 600, 900}
			var sorted []arrow.RecordBatch
			var keys []*array.Binary
			for i := 1; i < len(cuts); i++ {
				run := rec.NewSlice(cuts[i-1], cuts[i])
				s, k, err := bound.SortWithKeys(ctx, mem, run, q)
				run.Release()
				if err != nil {
					t.Fatal(err)
				}
				for j := 1; j < k.Len(); j++ {
					if bytes.Compare(k.Value(j-1), k.Value(j)) > 0 {
						t.Fatalf("run %d: keys out of order at %d", i, j)
					}
				}
				sorted, keys = append(sorted, s), append(keys, k)
			}
			defer func() {
				for i := range sorted {
					sorted[i].Release()
					keys[i].Release()
				}
			}()
			merged := mergeRuns(keys)
			if len(merged) != int(want.NumRows()) {
				t.Fatalf("merged %d rows, want %d", len(merged), want.NumRows())
			}
			for i, m := range merged {
				for c := range int(want.NumCols()) {
					if g, w := valueAt(t, sorted[m[0]].Column(c), m[1]), valueAt(t, want.Column(c), i); !sameValue(g, w) {
						t.Fatalf("row %d, column %d: merged %v, sorted whole %v", i, c, g, w)
					}
				}
			}
		})
	}
}

// A sample larger than its room keeps an even, deterministic share of the
// rows, and quantiles from it order values as the values order.
func TestSamplerThinsEvenly(t *testing.T) {
	sc := allTypesSchema()
	ctx, mem := checkedCtx(t)
	_ = ctx
	rng := rand.New(rand.NewPCG(9, 99))
	rows := genRows(rng, sc, 1000)
	rec := buildRecord(t, mem, arrowSchema(t, sc, true, false), rows)
	defer rec.Release()
	bound, err := Order{ZOrder: true, Fields: []Field{{Column: "l"}, {Column: "d"}}}.Bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	sample := func() *Sampler {
		s := bound.NewSampler(100)
		if err := s.Add(rec); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := sample(), sample()
	if a.Exact() || len(a.vals[0]) > 100 || len(a.vals[0]) < 50 {
		t.Fatalf("sample of 1000 rows in room for 100: %d rows, exact %v", len(a.vals[0]), a.Exact())
	}
	qa, qb := a.Quantiles(), b.Quantiles()
	for c := range qa.cols {
		if !slicesEqual(qa.cols[c], qb.cols[c]) {
			t.Fatal("two samples of the same rows differ")
		}
	}
	rds, err := bound.readers(rec)
	if err != nil {
		t.Fatal(err)
	}
	for range 500 {
		i, j := rng.IntN(1000), rng.IntN(1000)
		vi, vj := rds[0].zValue(i), rds[0].zValue(j)
		if vi < vj && qa.quantile(0, vi) > qa.quantile(0, vj) {
			t.Fatalf("quantiles invert %d < %d", vi, vj)
		}
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
