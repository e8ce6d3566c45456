package commit

import (
	"bytes"
	"encoding/binary"
	"reflect"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// partitionFilter tells, from a manifest's partition summaries in the
// manifest list, whether the manifest may hold a file of one of a set of
// partitions: the first commit attempt then reads only those manifests
// instead of every manifest of the table. It errs towards "may": a
// manifest wrongly skipped would hide a file the rewrite removes, which the
// commit then refuses (an input not found live) or keeps (a delete file not
// found is not removed), so a mistake costs a job, never a row.
type partitionFilter struct {
	meta   table.Metadata
	bySpec map[int32][]map[int]any
	// all: some partition is unknown or unpartitioned; read everything.
	all bool
}

func newPartitionFilter(meta table.Metadata) *partitionFilter {
	return &partitionFilter{meta: meta, bySpec: map[int32][]map[int]any{}}
}

func (pf *partitionFilter) add(df iceberg.DataFile) {
	spec := pf.meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil || spec.IsUnpartitioned() || len(df.Partition()) == 0 {
		pf.all = true
		return
	}
	pf.bySpec[df.SpecID()] = append(pf.bySpec[df.SpecID()], df.Partition())
}

// mayHold reports whether m may hold a file of one of the partitions.
func (pf *partitionFilter) mayHold(m iceberg.ManifestFile) bool {
	if pf.all {
		return true
	}
	parts, ok := pf.bySpec[m.PartitionSpecID()]
	if !ok {
		return false // a manifest holds files of its own spec only
	}
	spec := pf.meta.PartitionSpecByID(int(m.PartitionSpecID()))
	summaries := m.Partitions()
	if spec == nil || summaries == nil {
		return true
	}
	fields := spec.PartitionType(pf.meta.CurrentSchema()).FieldList
	if len(summaries) != len(fields) {
		return true
	}
	for _, p := range parts {
		if summariesMayHold(summaries, fields, p) {
			return true
		}
	}
	return false
}

func summariesMayHold(summaries []iceberg.FieldSummary, fields []iceberg.NestedField, partition map[int]any) bool {
	for i, f := range fields {
		if !fieldMayHold(summaries[i], partition[f.ID]) {
			return false
		}
	}
	return true
}

// fieldMayHold compares one partition value with a field summary. Only
// encodings whose byte order is the value order are compared: integers
// (little-endian, decoded), and strings without characters outside the
// Basic Multilingual Plane (where UTF-8 byte order, code point order and
// Java's UTF-16 order agree). Anything else may be held.
func fieldMayHold(s iceberg.FieldSummary, v any) bool {
	if v == nil {
		return s.ContainsNull
	}
	if s.LowerBound == nil || s.UpperBound == nil {
		return true // no non-null value summarised: cannot tell
	}
	lower, upper := *s.LowerBound, *s.UpperBound
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int32:
		if len(lower) != 4 || len(upper) != 4 {
			return true
		}
		n := int32(rv.Int())
		return int32(binary.LittleEndian.Uint32(lower)) <= n && n <= int32(binary.LittleEndian.Uint32(upper))
	case reflect.Int64:
		if len(lower) != 8 || len(upper) != 8 {
			return true
		}
		n := rv.Int()
		return int64(binary.LittleEndian.Uint64(lower)) <= n && n <= int64(binary.LittleEndian.Uint64(upper))
	case reflect.String:
		b := []byte(rv.String())
		if outsideBMP(b) || outsideBMP(lower) || outsideBMP(upper) {
			return true
		}
		return bytes.Compare(lower, b) <= 0 && bytes.Compare(b, upper) <= 0
	}
	return true
}

// outsideBMP reports whether UTF-8 text b holds a four-byte sequence.
func outsideBMP(b []byte) bool {
	for _, c := range b {
		if c >= 0xF0 {
			return true
		}
	}
	return false
}
