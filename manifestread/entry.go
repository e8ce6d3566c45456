package manifestread

import (
	"math/big"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
	"github.com/twmb/avro/atype"
)

// wireEntry is a manifest entry as decoded from the file, with only the
// fields reactor counts: the decoder skips the rest (the column
// statistics), which is most of an entry's bytes.
type wireEntry struct {
	Status     int32    `avro:"status"`
	Snapshot   *int64   `avro:"snapshot_id"`
	SeqNum     *int64   `avro:"sequence_number"`
	FileSeqNum *int64   `avro:"file_sequence_number"`
	Data       wireFile `avro:"data_file"`
}

type wireFile struct {
	Content            int32          `avro:"content"`
	Path               string         `avro:"file_path"`
	Format             string         `avro:"file_format"`
	Partition          map[string]any `avro:"partition"`
	RecordCount        int64          `avro:"record_count"`
	FileSize           int64          `avro:"file_size_in_bytes"`
	Key                *[]byte        `avro:"key_metadata"`
	Splits             *[]int64       `avro:"split_offsets"`
	EqualityIDs        *[]int         `avro:"equality_ids"`
	SortOrder          *int           `avro:"sort_order_id"`
	FirstRowID         *int64         `avro:"first_row_id"`
	ReferencedDataFile *string        `avro:"referenced_data_file"`
	ContentOffset      *int64         `avro:"content_offset"`
	ContentSize        *int64         `avro:"content_size_in_bytes"`
}

// DataFile is a data or delete file as a manifest entry names it. It
// answers every iceberg.DataFile method as iceberg-go's reader does except
// the column statistics, which it does not decode: ColumnSizes,
// ValueCounts, NullValueCounts, NaNValueCounts, DistinctValueCounts,
// LowerBoundValues and UpperBoundValues return nil. It is for counting and
// planning; never hand it to a manifest writer (the statistics would be
// lost).
type DataFile struct {
	w      wireFile
	specID int32
	fields *fieldMaps // shared with every file of the same schema: read only
}

var _ iceberg.DataFile = (*DataFile)(nil)

func (d *DataFile) ContentType() iceberg.ManifestEntryContent {
	return iceberg.ManifestEntryContent(d.w.Content)
}
func (d *DataFile) FilePath() string               { return d.w.Path }
func (d *DataFile) FileFormat() iceberg.FileFormat { return iceberg.FileFormat(d.w.Format) }
func (d *DataFile) Count() int64                   { return d.w.RecordCount }
func (d *DataFile) FileSizeBytes() int64           { return d.w.FileSize }
func (d *DataFile) SpecID() int32                  { return d.specID }

// Partition maps partition field ids to values typed as iceberg-go types
// them (iceberg.Date, iceberg.Timestamp, ...); a fresh map each call.
func (d *DataFile) Partition() map[int]any {
	if len(d.w.Partition) == 0 {
		return nil // iceberg-go's is nil for an unpartitioned file
	}
	out := make(map[int]any, len(d.w.Partition))
	for name, v := range d.w.Partition {
		id, ok := d.fields.nameToID[name]
		if !ok {
			continue
		}
		v = d.fields.convert(v, id)
		if b, ok := v.([]byte); ok {
			v = slices.Clone(b)
		}
		out[id] = v
	}
	return out
}

func (d *DataFile) ColumnSizes() map[int]int64         { return nil }
func (d *DataFile) ValueCounts() map[int]int64         { return nil }
func (d *DataFile) NullValueCounts() map[int]int64     { return nil }
func (d *DataFile) NaNValueCounts() map[int]int64      { return nil }
func (d *DataFile) DistinctValueCounts() map[int]int64 { return nil }
func (d *DataFile) LowerBoundValues() map[int][]byte   { return nil }
func (d *DataFile) UpperBoundValues() map[int][]byte   { return nil }

func (d *DataFile) KeyMetadata() []byte {
	if d.w.Key == nil {
		return nil
	}
	return slices.Clone(*d.w.Key)
}

func (d *DataFile) SplitOffsets() []int64 {
	if d.w.Splits == nil {
		return nil
	}
	return slices.Clone(*d.w.Splits)
}

func (d *DataFile) EqualityFieldIDs() []int {
	if d.w.EqualityIDs == nil {
		return nil
	}
	return slices.Clone(*d.w.EqualityIDs)
}

func (d *DataFile) SortOrderID() *int           { return clonePointer(d.w.SortOrder) }
func (d *DataFile) FirstRowID() *int64          { return clonePointer(d.w.FirstRowID) }
func (d *DataFile) ReferencedDataFile() *string { return clonePointer(d.w.ReferencedDataFile) }
func (d *DataFile) ContentOffset() *int64       { return clonePointer(d.w.ContentOffset) }
func (d *DataFile) ContentSizeInBytes() *int64  { return clonePointer(d.w.ContentSize) }
func clonePointer[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// fieldMaps are what a manifest's schema says about its partition
// fields: iceberg-go's getFieldIDMap, built once per schema text.
type fieldMaps struct {
	nameToID  map[string]int
	idToType  map[int]string // logical types, day transforms as dates
	idToScale map[int]int    // decimal scales
}

// convert types a decoded partition value as iceberg-go's
// dataFile.convertAvroValueToIcebergType does (manifest.go, v0.7.0).
func (f *fieldMaps) convert(v any, id int) any {
	if v == nil {
		return nil
	}
	logical, ok := f.idToType[id]
	if !ok {
		return v
	}
	switch logical {
	case atype.Date:
		if t, ok := v.(time.Time); ok {
			return iceberg.Date(t.Truncate(24*time.Hour).Unix() / int64((time.Hour * 24).Seconds()))
		}
		if n, ok := v.(int32); ok {
			return iceberg.Date(n)
		}
	case atype.TimeMillis:
		if d, ok := v.(time.Duration); ok {
			return iceberg.Time(d.Microseconds())
		}
		if ms, ok := asInt64(v); ok {
			return iceberg.Time(ms * 1000)
		}
	case atype.TimeMicros:
		if d, ok := v.(time.Duration); ok {
			return iceberg.Time(d.Microseconds())
		}
		if us, ok := asInt64(v); ok {
			return iceberg.Time(us)
		}
	case atype.TimestampMillis:
		if t, ok := v.(time.Time); ok {
			return iceberg.Timestamp(t.UTC().UnixMicro())
		}
		if ms, ok := asInt64(v); ok {
			return iceberg.Timestamp(ms * 1000)
		}
	case atype.TimestampMicros:
		if t, ok := v.(time.Time); ok {
			return iceberg.Timestamp(t.UTC().UnixMicro())
		}
		if us, ok := asInt64(v); ok {
			return iceberg.Timestamp(us)
		}
	case atype.TimestampNanos:
		if t, ok := v.(time.Time); ok {
			return iceberg.TimestampNano(t.UTC().UnixNano())
		}
		if ns, ok := asInt64(v); ok {
			return iceberg.TimestampNano(ns)
		}
	case atype.Decimal:
		if r, ok := v.(*big.Rat); ok {
			scale := f.idToScale[id]
			factor := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
			unscaled := new(big.Int).Mul(r.Num(), factor)
			unscaled = unscaled.Div(unscaled, r.Denom())
			return iceberg.DecimalLiteral{Scale: scale, Val: decimal128.FromBigInt(unscaled)}
		}
	case atype.UUID:
		if u, ok := v.([16]byte); ok {
			return uuid.UUID(u)
		}
	}
	return v
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}
