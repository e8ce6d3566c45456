package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
)

// The table: 12 columns of the kinds a streaming table carries (ids,
// times, a low-cardinality partition column, numbers, a short and a long
// string), one partition, written by iceberg-go in files of rowsPerFile
// rows (about 1.5 MB each: the small files of a streaming writer).
var (
	benchNamespace = table.Identifier{"bench"}
	benchTable     = table.Identifier{"bench", "events"}
)

const rowsPerFile = 10_000

func benchSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 3, Name: "category", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 7, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 8, Name: "payload", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 9, Name: "price", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 10, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 11, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 12, Name: "counter", Type: iceberg.PrimitiveTypes.Int32},
	)
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"

// batch builds rows first..first+n-1, deterministic in first.
func batch(sc *arrow.Schema, first int64, n int) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(uint64(first), 0x5eed))
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
		id := first + i
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(base + id*1000 + rng.Int64N(1000)))
		b.Field(2).(*array.StringBuilder).Append("a")
		b.Field(3).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
		b.Field(4).(*array.Float64Builder).Append(rng.Float64() * 1000)
		b.Field(5).(*array.Float64Builder).Append(rng.NormFloat64())
		b.Field(6).(*array.StringBuilder).Append(str(10, 20))
		b.Field(7).(*array.StringBuilder).Append(str(100, 160))
		b.Field(8).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(10_000_000)))
		b.Field(9).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		b.Field(10).(*array.Date32Builder).Append(arrow.Date32(20454 + id/100_000))
		if rng.IntN(10) == 0 {
			b.Field(11).(*array.Int32Builder).AppendNull()
		} else {
			b.Field(11).(*array.Int32Builder).Append(rng.Int32N(1000))
		}
	}
	return b.NewRecordBatch()
}

// generate builds a table of about bytes of Parquet under dir (catalog.db
// and warehouse/), one partition, committed in one append.
func generate(ctx context.Context, dir string, bytes int64, logf func(string, ...any)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		return err
	}
	if err := cat.CreateNamespace(ctx, benchNamespace, nil); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "category", Transform: iceberg.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, benchTable, benchSchema(), catalog.WithPartitionSpec(&spec),
		catalog.WithLocation("file://"+filepath.Join(dir, "warehouse", "bench", "events")))
	if err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		files   []iceberg.DataFile
		written int64
		first   int64
		wg      sync.WaitGroup
		errs    = make(chan error, 2)
	)
	next := func() (int64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if written >= bytes {
			return 0, false
		}
		f := first
		first += rowsPerFile
		return f, true
	}
	start := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				f, ok := next()
				if !ok {
					return
				}
				rec := batch(sc, f, rowsPerFile)
				one := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
				for df, err := range table.WriteRecords(ctx, tbl, sc, one) {
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					files = append(files, df)
					written += df.FileSizeBytes()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("write data files: %w", err)
	}
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(ctx, files, nil); err != nil {
		return fmt.Errorf("add data files: %w", err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	logf("generated %s: %d files, %d rows, %.1f MB in %s", dir, len(files), first, float64(written)/1e6,
		time.Since(start).Round(time.Second))
	return nil
}
