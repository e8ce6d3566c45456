package sortorder

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// benchRows is the batch size the benchmarks sort: a million rows of two
// long columns (16 MB of values), about what one max_group_size group of
// a narrow table holds.
const benchRows = 1_000_000

func benchBatch(b *testing.B) (*iceberg.Schema, arrow.RecordBatch) {
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.Int64})
	rng := rand.New(rand.NewPCG(1, 1))
	mem := memory.NewGoAllocator()
	rb := array.NewRecordBuilder(mem, arrowSchema(b, sc, true, false))
	defer rb.Release()
	ab, bb := rb.Field(0).(*array.Int64Builder), rb.Field(1).(*array.Int64Builder)
	ab.Reserve(benchRows)
	bb.Reserve(benchRows)
	for range benchRows {
		// a has many duplicates so b decides often; b is spread wide.
		ab.Append(rng.Int64N(1000))
		bb.Append(int64(rng.Uint64()))
	}
	return sc, rb.NewRecordBatch()
}

func BenchmarkSort(b *testing.B) {
	sc, rec := benchBatch(b)
	defer rec.Release()
	for _, spec := range []string{"a, b", "a DESC NULLS FIRST, b", "zorder(a, b)"} {
		o, err := Parse(spec)
		if err != nil {
			b.Fatal(err)
		}
		bound, err := o.Bind(sc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(spec, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := bound.Sort(context.Background(), rec)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRows, "ns/row")
		})
	}
}
