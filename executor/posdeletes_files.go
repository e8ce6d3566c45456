package executor

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
	"github.com/google/uuid"
)

// readPositionDeletes calls visit for every (file_path, pos) row of a
// Parquet position-delete file, reading only those two columns (Java's
// writers may add a wide "row" column).
func readPositionDeletes(ctx context.Context, fs iceio.IO, path string, visit func(string, int64)) error {
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
		case col.SchemaNode().FieldID() == filePathFieldID, col.Path() == "file_path":
			fpCol = i
		case col.SchemaNode().FieldID() == posFieldID, col.Path() == "pos":
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

// writeDeleteMerge writes m's rows as position-delete files of m's
// partition, rolling to a new file every rowsPerFile rows.
func writeDeleteMerge(ctx context.Context, tbl *table.Table, wfs iceio.WriteFileIO, m *deleteMerge, writeID uuid.UUID) error {
	meta := tbl.Metadata()
	spec := meta.PartitionSpecByID(int(m.specID))
	if spec == nil {
		return fmt.Errorf("unknown partition spec %d", m.specID)
	}
	locate, err := partitionLocation(tbl, spec, m.sample)
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(iceberg.PositionalDeleteSchema, nil, true, false)
	if err != nil {
		return fmt.Errorf("arrow schema: %w", err)
	}
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithCompression(deleteCodec(meta.Properties())))
	for start := 0; start < len(m.rows); start += m.rowsPerFile {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := m.rows[start:min(start+m.rowsPerFile, len(m.rows))]
		path := locate(fmt.Sprintf("%s-%05d%s", writeID, len(m.written), mergedDeleteSuffix))
		m.written = append(m.written, path)
		size, fmeta, err := writePositionDeleteFile(wfs, path, sc, props, m.paths, rows)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		df, err := table.DataFileFromMetadata(table.DataFileArgs{
			Schema:          iceberg.PositionalDeleteSchema,
			Spec:            *spec,
			Format:          iceberg.ParquetFile,
			Metadata:        fmeta,
			FilePath:        path,
			FileSize:        size,
			Content:         iceberg.EntryContentPosDeletes,
			PartitionValues: m.values,
			// Exact file_path bounds: with the default truncate(16) every
			// merged file would look partition-scoped and scan planning
			// would try it against every data file of the partition.
			Properties:    iceberg.Properties{table.MetricsModeColumnConfPrefix + ".file_path": "full"},
			FormatVersion: meta.Version(),
		})
		if err != nil {
			return fmt.Errorf("describe %s: %w", path, err)
		}
		m.outputs = append(m.outputs, df)
	}
	return nil
}

// writePositionDeleteFile writes one Parquet position-delete file and
// returns its size and footer.
func writePositionDeleteFile(wfs iceio.WriteFileIO, path string, sc *arrow.Schema, props *parquet.WriterProperties,
	paths []string, rows []posDeleteRow) (int64, *metadata.FileMetaData, error) {
	out, err := wfs.Create(path)
	if err != nil {
		return 0, nil, err
	}
	sink := &countingWriter{w: out}
	w, err := pqarrow.NewFileWriter(sc, sink, props, pqarrow.DefaultWriterProps())
	if err != nil {
		out.Close()
		return 0, nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	fp, pos := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.Int64Builder)
	for start := 0; start < len(rows); start += deleteWriteBatchRows {
		for _, r := range rows[start:min(start+deleteWriteBatchRows, len(rows))] {
			fp.Append(paths[r.file])
			pos.Append(r.pos)
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
	return sink.n, fmeta, nil
}

// countingWriter counts the bytes written through it: the file's real size
// without asking the object store for it afterwards.
type countingWriter struct {
	w io.WriteCloser
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Close() error { return c.w.Close() }

// partitionLocation returns where new files of sample's partition go: the
// same place iceberg-go's own writers put them (data/<partition path>,
// through the table's location provider, so object-store layouts hash as
// they do for the writers' files).
func partitionLocation(tbl *table.Table, spec *iceberg.PartitionSpec, sample iceberg.DataFile) (func(string) string, error) {
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

// deleteCodec is the table's Parquet codec for delete files (Iceberg's
// write.delete.parquet.compression-codec, else the data files' codec), with
// iceberg-go's default, zstd, for anything it does not name.
func deleteCodec(props iceberg.Properties) compress.Compression {
	name := props.Get("write.delete.parquet.compression-codec", props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault))
	switch name {
	case "snappy":
		return compress.Codecs.Snappy
	case "gzip":
		return compress.Codecs.Gzip
	case "uncompressed":
		return compress.Codecs.Uncompressed
	case "lz4raw":
		return compress.Codecs.Lz4Raw
	case "brotli":
		return compress.Codecs.Brotli
	default:
		return compress.Codecs.Zstd
	}
}
