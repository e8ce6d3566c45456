package extsort

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// sliceColumns is rows [start, end) of rec's first ncols columns.
func sliceColumns(sc *arrow.Schema, rec arrow.RecordBatch, ncols int, start, end int64) arrow.RecordBatch {
	cols := make([]arrow.Array, ncols)
	for i := range cols {
		cols[i] = array.NewSlice(rec.Column(i), start, end)
	}
	out := array.NewRecordBatch(sc, cols, end-start)
	for _, c := range cols {
		c.Release()
	}
	return out
}

// takeRows is rec's rows at idx, in that order.
func takeRows(ctx context.Context, rec arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	b := array.NewInt32Builder(compute.GetAllocator(ctx))
	b.AppendValues(idx, nil)
	indices := b.NewInt32Array()
	b.Release()
	defer indices.Release()
	values := compute.NewDatum(rec)
	defer values.Release()
	ix := compute.NewDatum(indices)
	defer ix.Release()
	out, err := compute.Take(ctx, compute.TakeOptions{BoundsCheck: false}, values, ix)
	if err != nil {
		return nil, fmt.Errorf("merge sorted runs: %w", err)
	}
	defer out.Release()
	rd, ok := out.(*compute.RecordDatum)
	if !ok {
		return nil, fmt.Errorf("merge sorted runs: take returned %s", out.Kind())
	}
	rd.Value.Retain()
	return rd.Value, nil
}

// RecordBytes is the bytes of rec's buffers (slices count their whole
// buffers: an overestimate, which only makes runs shorter).
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += int64(c.Data().SizeInBytes())
	}
	return n
}

// ConcatBatches joins batches into one, allocating from mem.
func ConcatBatches(mem memory.Allocator, schema *arrow.Schema, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, 0, len(batches))
		for _, b := range batches {
			parts = append(parts, b.Column(i))
		}
		if len(parts) == 0 {
			cols[i] = array.MakeArrayOfNull(mem, schema.Field(i).Type, 0)
			continue
		}
		col, err := array.Concatenate(parts, mem)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
		cols[i] = col
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}
