package deadfiles

import (
	"encoding/binary"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor/internal/datapath"
)

func longBound(v int64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(v))
	return b
}

// The metadata judgement of the dead-delete sweep, case by case: it may
// call a delete dead only when sequence numbers, paths or key ranges prove
// that no live row can match it.
func TestDeleteReachesNothing(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "category", Type: iceberg.PrimitiveTypes.String, Required: true})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000,
		Transform: iceberg.IdentityTransform{}, Name: "category"})
	meta, err := table.NewMetadata(schema, &spec, table.UnsortedSortOrder, "file:///t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	spec = meta.PartitionSpec()
	file := func(content iceberg.ManifestEntryContent, path, category string, build func(*iceberg.DataFileBuilder)) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, content, path, iceberg.ParquetFile, map[int]any{1000: category}, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		if build != nil {
			build(b)
		}
		return b.Build()
	}
	data := func(path, category string, lo, hi int64) iceberg.DataFile {
		return file(iceberg.EntryContentData, path, category, func(b *iceberg.DataFileBuilder) {
			b.LowerBoundValues(map[int][]byte{1: longBound(lo)}).UpperBoundValues(map[int][]byte{1: longBound(hi)})
		})
	}
	eq := func(lo, hi int64, nulls map[int]int64) iceberg.DataFile {
		return file(iceberg.EntryContentEqDeletes, "file:///t/data/category=p0/eq.parquet", "p0", func(b *iceberg.DataFileBuilder) {
			b.EqualityFieldIDs([]int{1}).NullValueCounts(nulls).
				LowerBoundValues(map[int][]byte{1: longBound(lo)}).UpperBoundValues(map[int][]byte{1: longBound(hi)})
		})
	}
	pos := func(lo, hi string) iceberg.DataFile {
		return file(iceberg.EntryContentPosDeletes, "file:///t/data/category=p0/pos.parquet", "p0", func(b *iceberg.DataFileBuilder) {
			b.LowerBoundValues(map[int][]byte{datapath.FilePathFieldID: []byte(lo)}).UpperBoundValues(map[int][]byte{datapath.FilePathFieldID: []byte(hi)})
		})
	}
	type live struct {
		df  iceberg.DataFile
		seq int64
	}
	noNulls := map[int]int64{1: 0}
	const a, b = "file:///t/data/category=p0/a.parquet", "file:///t/data/category=p0/b.parquet"
	for _, tc := range []struct {
		name  string
		del   iceberg.DataFile
		seq   int64
		files []live
		dead  bool
	}{
		{"eq key outside the older file's range", eq(15, 15, noNulls), 5, []live{{data(a, "p0", 1, 10), 3}}, true},
		{"eq key inside the older file's range", eq(15, 15, noNulls), 5, []live{{data(a, "p0", 10, 20), 3}}, false},
		{"eq range overlapping at the edge", eq(20, 30, noNulls), 5, []live{{data(a, "p0", 10, 20), 3}}, false},
		{"eq key inside a file as new as the delete", eq(15, 15, noNulls), 5, []live{{data(a, "p0", 10, 20), 5}}, true},
		{"eq key inside a file of another partition", eq(15, 15, noNulls), 5, []live{{data(a, "p1", 10, 20), 3}}, true},
		{"eq with unknown null count", eq(15, 15, nil), 5, []live{{data(a, "p0", 1, 10), 3}}, false},
		{"eq with a null key", eq(15, 15, map[int]int64{1: 1}), 5, []live{{data(a, "p0", 1, 10), 3}}, false},
		{"eq with no older file", eq(15, 15, noNulls), 5, []live{{data(a, "p0", 10, 20), 6}}, true},
		{"pos naming a live older file", pos(a, a), 5, []live{{data(a, "p0", 1, 10), 5}}, false},
		{"pos naming a newer file", pos(a, a), 5, []live{{data(a, "p0", 1, 10), 6}}, true},
		{"pos naming a file that is gone", pos(a, a), 5, []live{{data(b, "p0", 1, 10), 1}}, true},
		{"pos whose path range holds a live file", pos(a, b), 5, []live{{data(b, "p0", 1, 10), 1}}, false},
		{"pos whose path range holds no live file", pos(a+"x", a+"y"), 5, []live{{data(b, "p0", 1, 10), 1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reachCheck{meta: meta, schema: schema}
			for _, f := range tc.files {
				seq := f.seq
				r.tasks = append(r.tasks, table.FileScanTask{File: f.df, DataSequenceNumber: &seq})
				r.taskKeys = append(r.taskKeys, "category="+f.df.Partition()[1000].(string))
			}
			why, dead := r.appliesToNothing(tc.del, "category=p0", tc.seq)
			if dead != tc.dead {
				t.Errorf("dead = %v (%s), want %v", dead, why, tc.dead)
			}
		})
	}
}
