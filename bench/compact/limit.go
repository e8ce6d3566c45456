package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The limit: a plain arrow-go rewrite of the same files with one writer,
// no Iceberg metadata. It reads each input file as iceberg-go's scan does
// (pqarrow, column-parallel decoding, 131,072-row batches) and writes with
// the Parquet settings iceberg-go's writer uses by default: zstd at the
// default level, data page v2, 1 MiB pages of at most 20,000 rows, 2 MiB
// dictionary pages, dictionary encoding with the cost-based fallback on
// every column, buffered row groups closed at 128 MiB written or 1,048,576
// rows, the Arrow schema stored, and a new file once a file's bytes reach
// the target (table/internal/parquet_files.go, GetWriteProperties and
// ParquetFileWriter.Write, iceberg-go v0.7.0).
const (
	limitReadBatchRows = 1 << 17
	limitRowGroupRows  = 1 << 20
	limitRowGroupBytes = 128 << 20
)

func limitWriterProperties(sc *arrow.Schema) *parquet.WriterProperties {
	props := []parquet.WriterProperty{
		parquet.WithMaxRowGroupLength(limitRowGroupRows),
		parquet.WithDataPageSize(1 << 20),
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithBatchSize(20_000),
		parquet.WithDictionaryPageSizeLimit(2 << 20),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(-1),
		parquet.WithMaxBloomFilterBytes(1 << 20),
		parquet.WithDictionaryDefault(true),
	}
	for _, f := range sc.Fields() {
		props = append(props, parquet.WithDictionaryCostFallbackFor(f.Name, true))
	}
	return parquet.NewWriterProperties(props...)
}

// countingWriter counts the bytes a file writer wrote.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// limitResult is what the limit role reports.
type limitResult struct {
	Files    int   `json:"files"`
	Rows     int64 `json:"rows"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// rewriteLimit rewrites inputs into files of target bytes under outDir.
func rewriteLimit(ctx context.Context, inputs []string, outDir string, target int64) (limitResult, error) {
	var res limitResult
	mem := memory.DefaultAllocator
	var (
		out     *os.File
		counter *countingWriter
		fw      *pqarrow.FileWriter
		props   *parquet.WriterProperties
	)
	closeFile := func() error {
		if fw == nil {
			return nil
		}
		err := fw.Close() // closes out too
		fw, out = nil, nil
		res.BytesOut += counter.n
		res.Files++
		return err
	}
	for _, path := range inputs {
		st, err := os.Stat(path)
		if err != nil {
			return res, err
		}
		res.BytesIn += st.Size()
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return res, fmt.Errorf("open %s: %w", path, err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: limitReadBatchRows}, mem)
		if err != nil {
			pf.Close()
			return res, err
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			pf.Close()
			return res, err
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			if fw == nil {
				if props == nil {
					props = limitWriterProperties(rec.Schema())
				}
				out, err = os.Create(filepath.Join(outDir, fmt.Sprintf("%05d.parquet", res.Files)))
				if err != nil {
					return res, err
				}
				counter = &countingWriter{w: out}
				fw, err = pqarrow.NewFileWriter(rec.Schema(), struct {
					io.Writer
					io.Closer
				}{counter, out}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem), pqarrow.WithStoreSchema()))
				if err != nil {
					return res, err
				}
			}
			if fw.RowGroupTotalBytesWritten() >= limitRowGroupBytes {
				if err := fw.NewBufferedRowGroupChecked(); err != nil {
					return res, err
				}
			}
			if err := fw.WriteBuffered(rec); err != nil {
				return res, err
			}
			res.Rows += rec.NumRows()
			// As iceberg-go rolls: on the bytes flushed to the file, which
			// a buffered row group reaches only when the next one starts.
			if counter.n >= target {
				if err := closeFile(); err != nil {
					return res, err
				}
			}
		}
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return res, fmt.Errorf("read %s: %w", path, err)
		}
		rr.Release()
		pf.Close()
	}
	return res, closeFile()
}
