package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// The Parquet table properties reactor's writer understands, with
// iceberg-go's defaults (table/internal/parquet_files.go, v0.7.0). A table
// setting any other write.parquet.* or parquet.* property is rewritten
// through iceberg-go's own writer instead.
const (
	propRowGroupBytes = "write.parquet.row-group-size-bytes"
	propRowGroupRows  = "write.parquet.row-group-limit"
	propPageBytes     = "write.parquet.page-size-bytes"
	propPageRows      = "write.parquet.page-row-limit"
	propDictBytes     = "write.parquet.dict-size-bytes"
	propPageVersion   = "write.parquet.page-version"
	propCodec         = "write.parquet.compression-codec"
	propCodecLevel    = "write.parquet.compression-level"

	defaultRowGroupBytes = 128 << 20
	defaultRowGroupRows  = 1 << 20
	defaultPageBytes     = 1 << 20
	defaultPageRows      = 20_000
	defaultDictBytes     = 2 << 20
	defaultBloomMaxBytes = 1 << 20
)

// errNotOwnWriter says why a group goes through iceberg-go's writer.
var errNotOwnWriter = errors.New("not for reactor's writer")

// outputFormat is how a group's output files are written: reactor's own
// Parquet writer with iceberg-go's settings, file names, locations and
// DataFile statistics (table.DataFileFromMetadata), so that a rewrite can
// pool its buffers and write several files at once.
type outputFormat struct {
	fs            iceio.WriteFileIO
	schema        *iceberg.Schema
	arrowSchema   *arrow.Schema
	spec          iceberg.PartitionSpec
	partition     map[int]any
	loc           table.LocationProvider
	tableProps    iceberg.Properties
	formatVersion int
	props         []parquet.WriterProperty
	rowGroupBytes int64
	target        int64
}

// newOutputFormat prepares the writer of one group whose inputs all carry
// sample's partition, in the table's current spec, or says why iceberg-go's
// writer must write it: a table property, type or layout reactor's writer
// does not reproduce exactly.
func newOutputFormat(ctx context.Context, tbl *table.Table, sample iceberg.DataFile, target int64) (*outputFormat, error) {
	meta := tbl.Metadata()
	if meta.Version() >= 3 {
		return nil, fmt.Errorf("%w: format v3 (row lineage)", errNotOwnWriter)
	}
	if meta.DefaultSortOrder() != table.UnsortedSortOrderID {
		// iceberg-go sorts each batch by the table's default order.
		return nil, fmt.Errorf("%w: the table has a default sort order", errNotOwnWriter)
	}
	props := tbl.Properties()
	if f := props.Get(table.WriteFormatDefaultKey, "parquet"); !strings.EqualFold(f, "parquet") {
		return nil, fmt.Errorf("%w: write format %s", errNotOwnWriter, f)
	}
	for k := range props {
		if strings.HasPrefix(k, "write.parquet.") || strings.HasPrefix(k, "parquet.") {
			switch k {
			case propRowGroupBytes, propRowGroupRows, propPageBytes, propPageRows, propDictBytes, propPageVersion, propCodec, propCodecLevel:
			default:
				return nil, fmt.Errorf("%w: table property %s", errNotOwnWriter, k)
			}
		}
	}
	schema := tbl.Schema()
	if sanitized, err := iceberg.SanitizeColumnNames(schema); err != nil || !sanitized.Equals(schema) {
		return nil, fmt.Errorf("%w: column names iceberg-go sanitizes", errNotOwnWriter)
	}
	if err := plainTypes(schema.Fields()); err != nil {
		return nil, err
	}
	wfs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open table io: %w", err)
	}
	fs, ok := wfs.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("%w: the table's io cannot write", errNotOwnWriter)
	}
	sc, err := table.SchemaToArrowSchemaWithOptions(schema, table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: props})
	if err != nil {
		return nil, fmt.Errorf("%w: arrow schema: %w", errNotOwnWriter, err)
	}
	spec := tbl.Spec()
	locProps := props
	if !spec.IsUnpartitioned() {
		// As iceberg-go's writer places a partition's files.
		rec := table.GetPartitionRecord(sample, spec.PartitionType(schema))
		locProps = maps.Clone(props)
		locProps[table.WriteDataPathKey] = strings.TrimSuffix(tbl.Location(), "/") + "/data/" + spec.PartitionToPath(rec, schema)
	}
	loc, err := table.LoadLocationProvider(tbl.Location(), locProps)
	if err != nil {
		return nil, fmt.Errorf("location provider: %w", err)
	}
	f := &outputFormat{fs: fs, schema: schema, arrowSchema: sc, spec: spec, partition: sample.Partition(), loc: loc,
		tableProps: props, formatVersion: meta.Version(), target: target}
	if f.props, f.rowGroupBytes, err = parquetProperties(props, sc); err != nil {
		return nil, err
	}
	return f, nil
}

// plainTypes refuses the types whose statistics iceberg-go's writer
// computes from the data rather than the Parquet footer (variants,
// geometry, geography) or that it converts on the way (unknown).
func plainTypes(fields []iceberg.NestedField) error {
	for _, f := range fields {
		if err := plainType(f.Type); err != nil {
			return fmt.Errorf("%w: column %s: %w", errNotOwnWriter, f.Name, err)
		}
	}
	return nil
}

func plainType(t iceberg.Type) error {
	switch t := t.(type) {
	case *iceberg.StructType:
		for _, f := range t.FieldList {
			if err := plainType(f.Type); err != nil {
				return err
			}
		}
		return nil
	case *iceberg.ListType:
		return plainType(t.Element)
	case *iceberg.MapType:
		if err := plainType(t.KeyType); err != nil {
			return err
		}
		return plainType(t.ValueType)
	case iceberg.PrimitiveType:
		switch t.(type) {
		case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
			iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType,
			iceberg.StringType, iceberg.BinaryType, iceberg.UUIDType, iceberg.DecimalType, iceberg.FixedType:
			return nil
		}
	}
	return fmt.Errorf("type %s", t)
}

// parquetProperties are iceberg-go's Parquet writer properties for a
// table with props (GetWriteProperties in iceberg-go's
// table/internal/parquet_files.go): iceberg-go validates them the same way
// and rejects the same values.
func parquetProperties(props iceberg.Properties, sc *arrow.Schema) ([]parquet.WriterProperty, int64, error) {
	intProp := func(key string, def int64) (int64, error) {
		v, ok := props[key]
		if !ok {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: table property %s=%q", errNotOwnWriter, key, v)
		}
		return n, nil
	}
	var vals [5]int64
	for i, p := range []struct {
		key string
		def int64
	}{{propRowGroupBytes, defaultRowGroupBytes}, {propRowGroupRows, defaultRowGroupRows}, {propPageBytes, defaultPageBytes},
		{propPageRows, defaultPageRows}, {propDictBytes, defaultDictBytes}} {
		n, err := intProp(p.key, p.def)
		if err != nil {
			return nil, 0, err
		}
		vals[i] = n
	}
	version := parquet.DataPageV2
	switch v := props.Get(propPageVersion, "2"); v {
	case "1":
		version = parquet.DataPageV1
	case "2":
	default:
		return nil, 0, fmt.Errorf("%w: table property %s=%q", errNotOwnWriter, propPageVersion, v)
	}
	var codec compress.Compression
	levels := [2]int{0, 0}
	switch c := props.Get(propCodec, "zstd"); c {
	case "zstd":
		codec, levels = compress.Codecs.Zstd, [2]int{-5, 22}
	case "snappy":
		codec = compress.Codecs.Snappy
	case "gzip":
		codec, levels = compress.Codecs.Gzip, [2]int{-3, 9}
	case "uncompressed":
		codec = compress.Codecs.Uncompressed
	case "lz4raw":
		codec = compress.Codecs.Lz4Raw
	default:
		return nil, 0, fmt.Errorf("%w: compression codec %q", errNotOwnWriter, c)
	}
	level := -1
	if v, ok := props[propCodecLevel]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || (n != -1 && levels != [2]int{} && (n < levels[0] || n > levels[1])) {
			return nil, 0, fmt.Errorf("%w: table property %s=%q", errNotOwnWriter, propCodecLevel, v)
		}
		level = n
	}
	wp := []parquet.WriterProperty{
		parquet.WithMaxRowGroupLength(vals[1]),
		parquet.WithDataPageSize(vals[2]),
		parquet.WithDataPageVersion(version),
		parquet.WithBatchSize(vals[3]),
		parquet.WithDictionaryPageSizeLimit(vals[4]),
		parquet.WithCompression(codec),
		parquet.WithCompressionLevel(level),
		parquet.WithMaxBloomFilterBytes(defaultBloomMaxBytes),
		parquet.WithDictionaryDefault(true),
	}
	// iceberg-go applies parquet-mr's cost-based dictionary fallback to
	// every leaf column, as Iceberg Java does.
	pqs, err := pqarrow.ToParquet(sc, parquet.NewWriterProperties(wp...), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, 0, fmt.Errorf("%w: parquet schema: %w", errNotOwnWriter, err)
	}
	for i := range pqs.NumColumns() {
		wp = append(wp, parquet.WithDictionaryCostFallbackFor(pqs.Column(i).Path(), true))
	}
	return wp, vals[0], nil
}

// countingFile counts what a Parquet writer wrote to a file.
// Writes go through a buffer: the Parquet writer writes every page and
// header on its own, a system call each on local disk.
type countingFile struct {
	file iceio.FileWriter
	buf  *bufio.Writer
	n    int64
}

func newCountingFile(f iceio.FileWriter) *countingFile {
	return &countingFile{file: f, buf: bufio.NewWriterSize(f, 1<<20)}
}

func (c *countingFile) Write(p []byte) (int, error) {
	n, err := c.buf.Write(p)
	c.n += int64(n)
	return n, err
}

// Close flushes and closes the file.
func (c *countingFile) Close() error {
	err := c.buf.Flush()
	if cerr := c.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// rollingWriter writes one stream of batches into files of the target
// size, as iceberg-go's rolling writer does: a buffered row group is
// closed once its bytes reach write.parquet.row-group-size-bytes (or its
// rows the row-group limit), and a file once the bytes flushed to it
// reach the target. Its buffers come from mem.
type rollingWriter struct {
	f     *outputFormat
	mem   memory.Allocator
	name  uuid.UUID
	task  int
	props *parquet.WriterProperties
	// target is the file size it rolls at.
	target int64
	files  []iceberg.DataFile
	cur    *pqarrow.FileWriter
	out    *countingFile
	path   string
	count  int
}

func newRollingWriter(f *outputFormat, mem memory.Allocator, task int) *rollingWriter {
	return &rollingWriter{f: f, mem: mem, name: uuid.New(), task: task, props: f.writerProperties(mem, 0), target: f.target}
}

// writerProperties are f's Parquet properties with buffers from mem and,
// if rowGroupRows > 0, that row-group limit.
func (f *outputFormat) writerProperties(mem memory.Allocator, rowGroupRows int64) *parquet.WriterProperties {
	props := append([]parquet.WriterProperty{parquet.WithAllocator(mem)}, f.props...)
	if rowGroupRows > 0 {
		props = append(props, parquet.WithMaxRowGroupLength(rowGroupRows))
	}
	return parquet.NewWriterProperties(props...)
}

// write appends rec (the caller keeps its reference). Its columns must
// have the table schema's Arrow types.
func (w *rollingWriter) write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if w.cur == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	if w.cur.RowGroupTotalBytesWritten() >= w.f.rowGroupBytes {
		if err := w.cur.NewBufferedRowGroupChecked(); err != nil {
			return fmt.Errorf("write %s: %w", w.path, err)
		}
	}
	if err := w.cur.WriteBuffered(rec); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if w.out.n >= w.target {
		return w.closeFile()
	}
	return nil
}

func (w *rollingWriter) open() error {
	w.count++
	w.path = w.f.loc.NewDataLocation(fmt.Sprintf("%05d-%d-%s-%05d.parquet", w.task, w.task, w.name, w.count))
	file, err := w.f.fs.Create(w.path)
	if err != nil {
		return fmt.Errorf("create %s: %w", w.path, err)
	}
	w.out = newCountingFile(file)
	w.cur, err = pqarrow.NewFileWriter(w.f.arrowSchema, w.out, w.props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(w.mem), pqarrow.WithStoreSchema()))
	if err != nil {
		file.Close()
		return fmt.Errorf("create %s: %w", w.path, err)
	}
	return nil
}

func (w *rollingWriter) closeFile() error {
	fw := w.cur
	w.cur = nil
	if err := fw.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	meta, err := fw.FileMetadata()
	if err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{Schema: w.f.schema, Spec: w.f.spec, Format: iceberg.ParquetFile,
		Metadata: meta, FilePath: w.path, FileSize: w.out.n, Content: iceberg.EntryContentData,
		PartitionValues: maps.Clone(w.f.partition), Properties: w.f.tableProps, FormatVersion: w.f.formatVersion})
	if err != nil {
		return fmt.Errorf("data file of %s: %w", w.path, err)
	}
	w.files = append(w.files, df)
	return nil
}

// close finishes the last file and returns every file written.
func (w *rollingWriter) close() ([]iceberg.DataFile, error) {
	if w.cur != nil {
		if err := w.closeFile(); err != nil {
			return w.files, err
		}
	}
	return w.files, nil
}

// abort drops the file being written; the finished ones are the caller's
// to clean up (they are returned with the error).
func (w *rollingWriter) abort() {
	if w.cur == nil {
		return
	}
	_ = w.out.Close()
	_ = w.f.fs.Remove(w.path)
	w.cur = nil
}
