package datapath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// ReadPositionDeletes calls visit for every (file_path, pos) row of a
// Parquet position-delete file, reading only those two columns (Java's
// writers may add a wide "row" column).
func ReadPositionDeletes(ctx context.Context, fs iceio.IO, path string, visit func(string, int64)) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return fmt.Errorf("open parquet: %w", err)
	}
	defer pr.Close()
	fpCol, posCol := -1, -1
	sc := pr.MetaData().Schema
	for i := range sc.NumColumns() {
		col := sc.Column(i)
		switch {
		case col.SchemaNode().FieldID() == FilePathFieldID, col.Path() == "file_path":
			fpCol = i
		case col.SchemaNode().FieldID() == PosFieldID, col.Path() == "pos":
			posCol = i
		}
	}
	if fpCol < 0 || posCol < 0 {
		return errors.New("not a position-delete file: no file_path and pos columns")
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("open parquet: %w", err)
	}
	rr, err := fr.GetRecordReader(ctx, []int{fpCol, posCol}, nil)
	if err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		var (
			paths interface {
				arrow.Array
				Value(int) string
			}
			pos *array.Int64
		)
		for i, field := range rec.Schema().Fields() {
			switch c := rec.Column(i).(type) {
			case *array.String:
				if field.Name == "file_path" {
					paths = c
				}
			case *array.LargeString:
				if field.Name == "file_path" {
					paths = c
				}
			case *array.Int64:
				if field.Name == "pos" {
					pos = c
				}
			}
		}
		if paths == nil || pos == nil {
			return fmt.Errorf("unexpected position-delete columns %s", rec.Schema())
		}
		if paths.NullN() > 0 || pos.NullN() > 0 {
			return errors.New("null file_path or pos in a position-delete file")
		}
		for i := range int(rec.NumRows()) {
			visit(paths.Value(i), pos.Value(i))
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read rows: %w", err)
	}
	return nil
}

// WritePositionDeleteFile writes one Parquet position-delete file of the
// given rows, in order (row returns the i-th), and returns its size and
// footer.
func WritePositionDeleteFile(wfs iceio.WriteFileIO, path string, sc *arrow.Schema, props *parquet.WriterProperties,
	rows int, row func(i int) (filePath string, pos int64)) (int64, *metadata.FileMetaData, error) {
	out, err := wfs.Create(path)
	if err != nil {
		return 0, nil, err
	}
	sink := NewCountingWriter(out, 0)
	w, err := pqarrow.NewFileWriter(sc, sink, props, pqarrow.DefaultWriterProps())
	if err != nil {
		out.Close()
		return 0, nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	fp, pos := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.Int64Builder)
	for start := 0; start < rows; start += deleteWriteBatchRows {
		for i := start; i < min(start+deleteWriteBatchRows, rows); i++ {
			p, x := row(i)
			fp.Append(p)
			pos.Append(x)
		}
		rec := b.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			w.Close()
			return 0, nil, err
		}
	}
	if err := w.Close(); err != nil { // closes out too
		return 0, nil, err
	}
	fmeta, err := w.FileMetadata()
	if err != nil {
		return 0, nil, err
	}
	return sink.N, fmeta, nil
}

// PartitionLocation returns where new files of sample's partition go: the
// same place iceberg-go's own writers put them (data/<partition path>,
// through the table's location provider, so object-store layouts hash as
// they do for the writers' files).
func PartitionLocation(tbl *table.Table, spec *iceberg.PartitionSpec, sample iceberg.DataFile) (func(string) string, error) {
	sc := tbl.Metadata().CurrentSchema()
	partPath := spec.PartitionToPath(table.GetPartitionRecord(sample, spec.PartitionType(sc)), sc)
	props := tbl.Metadata().Properties()
	if partPath != "" {
		root, err := url.Parse(tbl.Location())
		if err != nil {
			return nil, fmt.Errorf("table location: %w", err)
		}
		props = iceberg.Properties{}
		for k, v := range tbl.Metadata().Properties() {
			props[k] = v
		}
		props[table.WriteDataPathKey] = root.JoinPath("data", partPath).String()
	}
	lp, err := table.LoadLocationProvider(tbl.Location(), props)
	if err != nil {
		return nil, fmt.Errorf("location provider: %w", err)
	}
	return lp.NewDataLocation, nil
}

// DeleteCodec is the table's Parquet codec for delete files (Iceberg's
// write.delete.parquet.compression-codec, else the data files' codec), with
// iceberg-go's default, zstd, for a codec codecNamed does not know: a
// delete file is always written, there is no other writer to hand it to.
func DeleteCodec(props iceberg.Properties) compress.Compression {
	name := props.Get("write.delete.parquet.compression-codec", props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault))
	if c, _, ok := codecNamed(name); ok {
		return c
	}
	return compress.Codecs.Zstd
}

// FilePathFieldID is the reserved field id of a position delete's
// file_path.
const FilePathFieldID = 2147483546

// PosFieldID is the reserved field id of a position delete's pos column.
const PosFieldID = 2147483545

// deleteWriteBatchRows bounds the rows held in one Arrow batch (and so one
// Parquet row group) while writing a merged file: a 64 MiB delete file holds
// millions of (file_path, pos) rows and the paths dominate the memory.
const deleteWriteBatchRows = 1 << 18
