package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

var benchNamespace = table.Identifier{"bench"}

func benchSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 3, Name: "category", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 7, Name: "payload", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 8, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 9, Name: "counter", Type: iceberg.PrimitiveTypes.Int32},
	)
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"

func batch(sc *arrow.Schema, seed int64, n int, category string) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	str := func(min, spread int) string {
		buf := make([]byte, min+rng.IntN(spread))
		for i := range buf {
			buf[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(buf)
	}
	for i := range int64(n) {
		id := seed*int64(n) + i
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(base + id*1000))
		b.Field(2).(*array.StringBuilder).Append(category)
		b.Field(3).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
		b.Field(4).(*array.Float64Builder).Append(rng.Float64() * 1000)
		b.Field(5).(*array.StringBuilder).Append(str(10, 20))
		b.Field(6).(*array.StringBuilder).Append(str(100, 160))
		b.Field(7).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		b.Field(8).(*array.Int32Builder).Append(rng.Int32N(1000))
	}
	return b.NewRecordBatch()
}

// generate creates ident with files data files of rows rows each, spread
// over partitions partitions, committed perCommit files at a time (one
// manifest per commit, as a streaming writer leaves them). It writes
// through cat, whose FileIO goes straight to the gateway.
func generate(ctx context.Context, cat catalog.Catalog, ident table.Identifier, files, rows, partitions, perCommit int) (int64, error) {
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "category", Transform: iceberg.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, ident, benchSchema(), catalog.WithPartitionSpec(&spec))
	if err != nil {
		return 0, fmt.Errorf("create table: %w", err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return 0, err
	}
	all := make([]iceberg.DataFile, files)
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		errMu sync.Mutex
		first error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rec := batch(sc, int64(i), rows, fmt.Sprintf("c%02d", i%partitions))
				one := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
				for df, err := range table.WriteRecords(ctx, tbl, sc, one) {
					if err != nil {
						errMu.Lock()
						first = err
						errMu.Unlock()
						continue
					}
					all[i] = df
				}
				rec.Release()
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return 0, fmt.Errorf("write data files: %w", first)
	}
	var bytes int64
	for start := 0; start < files; start += perCommit {
		end := min(start+perCommit, files)
		txn := tbl.NewTransaction()
		if err := txn.AddDataFiles(ctx, all[start:end], nil); err != nil {
			return 0, fmt.Errorf("add data files: %w", err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
		for _, f := range all[start:end] {
			bytes += f.FileSizeBytes()
		}
	}
	return bytes, nil
}
