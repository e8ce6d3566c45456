package datapath

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
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

// ErrNotOwnWriter says why a group goes through iceberg-go's writer.
var ErrNotOwnWriter = errors.New("not for reactor's writer")

// Format is how a group's output files are written: reactor's own
// Parquet writer with iceberg-go's settings, file names, locations and
// DataFile statistics (table.DataFileFromMetadata), so that a rewrite can
// pool its buffers and write several files at once.
type Format struct {
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
	// token is the job's output token (WithOutputToken), in every file
	// name: a later owner finds a killed job's outputs by it.
	token string
}

type outputTokenKey struct{}

// WithOutputToken makes every file a Format prepared under ctx carries
// token in its name. The name, not a record written before each file, is
// what lets a later owner find a killed job's outputs: the hot loop adds
// no round trip, and the one listing it costs is paid only after a crash.
func WithOutputToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, outputTokenKey{}, token)
}

// OutputToken is the token WithOutputToken put in ctx ("" if none).
func OutputToken(ctx context.Context) string {
	t, _ := ctx.Value(outputTokenKey{}).(string)
	return t
}

// ArrowSchema is the Arrow schema of the table's rows as f writes them
// (field ids included).
func (f *Format) ArrowSchema() *arrow.Schema { return f.arrowSchema }

// newFormat prepares the writer of one group whose inputs all carry
// sample's partition, in the table's current spec, or says why iceberg-go's
// writer must write it: a table property, type or layout reactor's writer
// does not reproduce exactly.
func newFormat(ctx context.Context, tbl *table.Table, sample iceberg.DataFile, target int64) (*Format, error) {
	meta := tbl.Metadata()
	if meta.Version() >= 3 {
		return nil, fmt.Errorf("%w: format v3 (row lineage)", ErrNotOwnWriter)
	}
	if meta.DefaultSortOrder() != table.UnsortedSortOrderID {
		// iceberg-go sorts each batch by the table's default order.
		return nil, fmt.Errorf("%w: the table has a default sort order", ErrNotOwnWriter)
	}
	props := tbl.Properties()
	if f := props.Get(table.WriteFormatDefaultKey, "parquet"); !strings.EqualFold(f, "parquet") {
		return nil, fmt.Errorf("%w: write format %s", ErrNotOwnWriter, f)
	}
	for k := range props {
		if strings.HasPrefix(k, "write.parquet.") || strings.HasPrefix(k, "parquet.") {
			switch k {
			case propRowGroupBytes, propRowGroupRows, propPageBytes, propPageRows, propDictBytes, propPageVersion, propCodec, propCodecLevel:
			default:
				return nil, fmt.Errorf("%w: table property %s", ErrNotOwnWriter, k)
			}
		}
	}
	schema := tbl.Schema()
	if sanitized, err := iceberg.SanitizeColumnNames(schema); err != nil || !sanitized.Equals(schema) {
		return nil, fmt.Errorf("%w: column names iceberg-go sanitizes", ErrNotOwnWriter)
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
		return nil, fmt.Errorf("%w: the table's io cannot write", ErrNotOwnWriter)
	}
	sc, err := table.SchemaToArrowSchemaWithOptions(schema, table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: props})
	if err != nil {
		return nil, fmt.Errorf("%w: arrow schema: %w", ErrNotOwnWriter, err)
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
	f := &Format{fs: fs, schema: schema, arrowSchema: sc, spec: spec, partition: sample.Partition(), loc: loc,
		tableProps: props, formatVersion: meta.Version(), target: target, token: OutputToken(ctx)}
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
			return fmt.Errorf("%w: column %s: %w", ErrNotOwnWriter, f.Name, err)
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
			return 0, fmt.Errorf("%w: table property %s=%q", ErrNotOwnWriter, key, v)
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
		return nil, 0, fmt.Errorf("%w: table property %s=%q", ErrNotOwnWriter, propPageVersion, v)
	}
	c := props.Get(propCodec, "zstd")
	codec, levels, ok := codecNamed(c)
	if !ok {
		return nil, 0, fmt.Errorf("%w: compression codec %q", ErrNotOwnWriter, c)
	}
	level := -1
	if v, ok := props[propCodecLevel]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || (n != -1 && levels != [2]int{} && (n < levels[0] || n > levels[1])) {
			return nil, 0, fmt.Errorf("%w: table property %s=%q", ErrNotOwnWriter, propCodecLevel, v)
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
		return nil, 0, fmt.Errorf("%w: parquet schema: %w", ErrNotOwnWriter, err)
	}
	for i := range pqs.NumColumns() {
		wp = append(wp, parquet.WithDictionaryCostFallbackFor(pqs.Column(i).Path(), true))
	}
	return wp, vals[0], nil
}

// CountingWriter counts the bytes written through it: a file's real size
// without asking the object store for it afterwards. With a buffer, writes
// go through it: the Parquet writer writes every page and header on its
// own, a system call each on local disk.
type CountingWriter struct {
	w   io.WriteCloser
	buf *bufio.Writer
	// N is the bytes written so far.
	N int64
}

// NewCountingWriter counts what is written to w, through a buffer of
// bufSize bytes (0: none).
func NewCountingWriter(w io.WriteCloser, bufSize int) *CountingWriter {
	c := &CountingWriter{w: w}
	if bufSize > 0 {
		c.buf = bufio.NewWriterSize(w, bufSize)
	}
	return c
}

func (c *CountingWriter) Write(p []byte) (int, error) {
	var (
		n   int
		err error
	)
	if c.buf != nil {
		n, err = c.buf.Write(p)
	} else {
		n, err = c.w.Write(p)
	}
	c.N += int64(n)
	return n, err
}

// Close flushes the buffer and closes the file.
func (c *CountingWriter) Close() error {
	var err error
	if c.buf != nil {
		err = c.buf.Flush()
	}
	if cerr := c.w.Close(); err == nil {
		err = cerr
	}
	return err
}

// RollingWriter writes one stream of batches into files of the target
// size, as iceberg-go's rolling writer does: a buffered row group is
// closed once its bytes reach write.parquet.row-group-size-bytes (or its
// rows the row-group limit), and a file once the bytes flushed to it
// reach the target. Its buffers come from mem.
type RollingWriter struct {
	f     *Format
	mem   memory.Allocator
	name  uuid.UUID
	task  int
	Props *parquet.WriterProperties
	// Target is the file size it rolls at (the Format's target), Props its
	// files' Parquet properties (the Format's, buffers from mem): a sort
	// rolls its files on rows instead and sets both.
	Target int64
	files  []iceberg.DataFile
	cur    *pqarrow.FileWriter
	out    *CountingWriter
	path   string
	count  int
}

func NewRollingWriter(f *Format, mem memory.Allocator, task int) *RollingWriter {
	return &RollingWriter{f: f, mem: mem, name: uuid.New(), task: task, Props: f.WriterProperties(mem, 0), Target: f.target}
}

// WriterProperties are f's Parquet properties with buffers from mem and,
// if rowGroupRows > 0, that row-group limit.
func (f *Format) WriterProperties(mem memory.Allocator, rowGroupRows int64) *parquet.WriterProperties {
	props := append([]parquet.WriterProperty{parquet.WithAllocator(mem)}, f.props...)
	if rowGroupRows > 0 {
		props = append(props, parquet.WithMaxRowGroupLength(rowGroupRows))
	}
	return parquet.NewWriterProperties(props...)
}

// Write appends rec (the caller keeps its reference). Its columns must
// have the table schema's Arrow types.
func (w *RollingWriter) Write(rec arrow.RecordBatch) error {
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
	if w.out.N >= w.Target {
		return w.closeFile()
	}
	return nil
}

func (w *RollingWriter) open() error {
	w.count++
	name := fmt.Sprintf("%05d-%d-%s-%05d.parquet", w.task, w.task, w.name, w.count)
	if w.f.token != "" {
		name = fmt.Sprintf("%05d-%d-%s-%s-%05d.parquet", w.task, w.task, w.name, w.f.token, w.count)
	}
	w.path = w.f.loc.NewDataLocation(name)
	file, err := w.f.fs.Create(w.path)
	if err != nil {
		return fmt.Errorf("create %s: %w", w.path, err)
	}
	w.out = NewCountingWriter(file, 1<<20)
	w.cur, err = pqarrow.NewFileWriter(w.f.arrowSchema, w.out, w.Props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(w.mem), pqarrow.WithStoreSchema()))
	if err != nil {
		file.Close()
		return fmt.Errorf("create %s: %w", w.path, err)
	}
	return nil
}

func (w *RollingWriter) closeFile() error {
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
		Metadata: meta, FilePath: w.path, FileSize: w.out.N, Content: iceberg.EntryContentData,
		PartitionValues: maps.Clone(w.f.partition), Properties: w.f.tableProps, FormatVersion: w.f.formatVersion})
	if err != nil {
		return fmt.Errorf("data file of %s: %w", w.path, err)
	}
	w.files = append(w.files, df)
	return nil
}

// Close finishes the last file and returns every file written.
func (w *RollingWriter) Close() ([]iceberg.DataFile, error) {
	if w.cur != nil {
		if err := w.closeFile(); err != nil {
			return w.files, err
		}
	}
	return w.files, nil
}

// Files are the files written and closed so far (the caller's to clean
// up after an error).
func (w *RollingWriter) Files() []iceberg.DataFile { return w.files }

// Abort drops the file being written; the finished ones are the caller's
// to clean up (they are returned with the error).
func (w *RollingWriter) Abort() {
	if w.cur == nil {
		return
	}
	_ = w.out.Close()
	_ = w.f.fs.Remove(w.path)
	w.cur = nil
}
