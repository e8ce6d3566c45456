// Package eqkeys reads the equality columns of Parquet files by field id
// and encodes their rows as comparable keys, for the conversion of
// equality deletes into position deletes (eqkeys.go: [ReadColumns],
// [Class], [AppendValue], [ErrFieldMissing]). It reads files; it must not
// decide which deletes apply to which rows (the executor's conversion
// does).
package eqkeys

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	iceio "github.com/apache/iceberg-go/io"
)

// ErrFieldMissing: a file has no top-level column for an equality field
// id.
var ErrFieldMissing = errors.New("equality field missing")

// ReadColumns reads the top-level columns with the given field ids
// (ascending) of a Parquet file, batch by batch, in that order, and returns
// the bytes of the column chunks read. A field id with no top-level column
// is ErrFieldMissing.
func ReadColumns(ctx context.Context, fs iceio.IO, path string, ids []int,
	visit func(cols []arrow.Array, rows int) error) (int64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return 0, fmt.Errorf("open parquet: %w", err)
	}
	defer pr.Close()
	sc := pr.MetaData().Schema
	leaf := make([]int, len(ids))
	for i, id := range ids {
		leaf[i] = -1
		for c := range sc.NumColumns() {
			col := sc.Column(c)
			if col.SchemaNode().FieldID() == int32(id) && len(col.ColumnPath()) == 1 {
				leaf[i] = c
				break
			}
		}
		if leaf[i] < 0 {
			return 0, fmt.Errorf("%w: no top-level column with field id %d in %s", ErrFieldMissing, id, path)
		}
	}
	var bytes int64
	for rg := range pr.NumRowGroups() {
		md := pr.MetaData().RowGroup(rg)
		for _, c := range leaf {
			if cc, err := md.ColumnChunk(c); err == nil {
				bytes += cc.TotalCompressedSize()
			}
		}
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return bytes, fmt.Errorf("open parquet: %w", err)
	}
	// The record reader returns the columns in leaf order; ids ascending
	// need not be, so each is placed by its position.
	sorted := slices.Clone(leaf)
	slices.Sort(sorted)
	rr, err := fr.GetRecordReader(ctx, sorted, nil)
	if err != nil {
		return bytes, fmt.Errorf("read columns: %w", err)
	}
	defer rr.Release()
	cols := make([]arrow.Array, len(ids))
	for rr.Next() {
		rec := rr.RecordBatch()
		if int(rec.NumCols()) != len(ids) {
			return bytes, fmt.Errorf("read %d columns, asked for %d", rec.NumCols(), len(ids))
		}
		for i, c := range leaf {
			cols[i] = rec.Column(slices.Index(sorted, c))
		}
		if err := visit(cols, int(rec.NumRows())); err != nil {
			return bytes, err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return bytes, fmt.Errorf("read rows: %w", err)
	}
	return bytes, nil
}

// Class groups the Arrow types whose values compare equal across
// files: integers of any width (an int field promoted to long), floats of
// either width, strings and binaries, and the rest by type. false: a type
// the conversion does not compare.
func Class(dt arrow.DataType) (byte, bool) {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return 'i', true
	case arrow.FLOAT32, arrow.FLOAT64:
		return 'f', true
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return 's', true
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return 'y', true
	case arrow.FIXED_SIZE_BINARY:
		return 'x', true
	case arrow.BOOL:
		return 'b', true
	case arrow.DATE32:
		return 'd', true
	case arrow.TIME64:
		return 'T', true
	case arrow.TIMESTAMP:
		return 't', true
	case arrow.DECIMAL128:
		return 'm', true
	}
	return 0, false
}

// AppendValue appends a self-delimiting encoding of row r of col to key:
// equal values of one class encode alike, and null (which an equality
// delete matches: nulls are equal) is its own value.
func AppendValue(key []byte, col arrow.Array, r int) []byte {
	if col.IsNull(r) {
		return append(key, 0)
	}
	key = append(key, 1)
	switch c := col.(type) {
	case *array.Int8:
		return binary.BigEndian.AppendUint64(key, uint64(int64(c.Value(r))))
	case *array.Int16:
		return binary.BigEndian.AppendUint64(key, uint64(int64(c.Value(r))))
	case *array.Int32:
		return binary.BigEndian.AppendUint64(key, uint64(int64(c.Value(r))))
	case *array.Int64:
		return binary.BigEndian.AppendUint64(key, uint64(c.Value(r)))
	case *array.Uint8:
		return binary.BigEndian.AppendUint64(key, uint64(c.Value(r)))
	case *array.Uint16:
		return binary.BigEndian.AppendUint64(key, uint64(c.Value(r)))
	case *array.Uint32:
		return binary.BigEndian.AppendUint64(key, uint64(c.Value(r)))
	case *array.Float32:
		return binary.BigEndian.AppendUint64(key, math.Float64bits(float64(c.Value(r))))
	case *array.Float64:
		return binary.BigEndian.AppendUint64(key, math.Float64bits(c.Value(r)))
	case *array.Boolean:
		if c.Value(r) {
			return append(key, 1)
		}
		return append(key, 0)
	case *array.Date32:
		return binary.BigEndian.AppendUint64(key, uint64(int64(c.Value(r))))
	case *array.Time64:
		return binary.BigEndian.AppendUint64(key, uint64(c.Value(r)))
	case *array.Timestamp:
		return binary.BigEndian.AppendUint64(key, uint64(c.Value(r)))
	case *array.Decimal128:
		v := c.Value(r)
		key = binary.BigEndian.AppendUint64(key, uint64(v.HighBits()))
		return binary.BigEndian.AppendUint64(key, v.LowBits())
	case *array.String:
		return appendBytes(key, []byte(c.Value(r)))
	case *array.LargeString:
		return appendBytes(key, []byte(c.Value(r)))
	case *array.StringView:
		return appendBytes(key, []byte(c.Value(r)))
	case *array.Binary:
		return appendBytes(key, c.Value(r))
	case *array.LargeBinary:
		return appendBytes(key, c.Value(r))
	case *array.BinaryView:
		return appendBytes(key, c.Value(r))
	case *array.FixedSizeBinary:
		return appendBytes(key, c.Value(r))
	}
	// Class admitted no other type.
	return append(key, 2)
}

func appendBytes(key, b []byte) []byte {
	key = binary.AppendUvarint(key, uint64(len(b)))
	return append(key, b...)
}
