package commit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Snapshot summary keys, spelled as iceberg-go (and Iceberg Java) write them.
const (
	sumAddedDataFiles        = "added-data-files"
	sumAddedDeleteFiles      = "added-delete-files"
	sumAddedEqDeletes        = "added-equality-deletes"
	sumAddedFileSize         = "added-files-size"
	sumAddedPosDeletes       = "added-position-deletes"
	sumAddedPosDeleteFiles   = "added-position-delete-files"
	sumAddedRecords          = "added-records"
	sumAddedEqDeleteFiles    = "added-equality-delete-files"
	sumDeletedDataFiles      = "deleted-data-files"
	sumDeletedRecords        = "deleted-records"
	sumRemovedDeleteFiles    = "removed-delete-files"
	sumRemovedEqDeletes      = "removed-equality-deletes"
	sumRemovedEqDeleteFiles  = "removed-equality-delete-files"
	sumRemovedFileSize       = "removed-files-size"
	sumRemovedPosDeletes     = "removed-position-deletes"
	sumRemovedPosDeleteFiles = "removed-position-delete-files"
	SumTotalEqDeletes        = "total-equality-deletes"
	SumTotalPosDeletes       = "total-position-deletes"
	SumTotalDataFiles        = "total-data-files"
	SumTotalDeleteFiles      = "total-delete-files"
	SumTotalRecords          = "total-records"
	SumTotalFileSize         = "total-files-size"
	sumChangedPartitionCount = "changed-partition-count"
	sumPartitionPrefix       = "partitions."
	SumManifestsKept         = "manifests-kept"
)

// fileCounts is one side (added or removed) of a snapshot's file counts,
// as iceberg-go's SnapshotSummaryCollector counts them.
type fileCounts struct {
	fileSize                       int64
	dataFiles, deleteFiles         int64
	posDeleteFiles, eqDeleteFiles  int64
	records, posDeletes, eqDeletes int64
}

func (c *fileCounts) count(df iceberg.DataFile) error {
	c.fileSize += df.FileSizeBytes()
	switch df.ContentType() {
	case iceberg.EntryContentData:
		c.dataFiles++
		c.records += df.Count()
	case iceberg.EntryContentPosDeletes:
		c.deleteFiles++
		c.posDeleteFiles++
		c.posDeletes += df.Count()
	case iceberg.EntryContentEqDeletes:
		c.deleteFiles++
		c.eqDeleteFiles++
		c.eqDeletes += df.Count()
	default:
		return fmt.Errorf("unknown data file content: %s", df.ContentType())
	}
	return nil
}

// fileMetrics is one snapshot's (or one partition's) added and removed
// file counts.
type fileMetrics struct{ added, removed fileCounts }

func (m *fileMetrics) add(df iceberg.DataFile) error    { return m.added.count(df) }
func (m *fileMetrics) remove(df iceberg.DataFile) error { return m.removed.count(df) }

func (m *fileMetrics) props() iceberg.Properties {
	p := iceberg.Properties{}
	set := func(key string, v int64) {
		if v > 0 {
			p[key] = strconv.FormatInt(v, 10)
		}
	}
	a, r := m.added, m.removed
	set(sumAddedFileSize, a.fileSize)
	set(sumRemovedFileSize, r.fileSize)
	set(sumAddedDataFiles, a.dataFiles)
	set(sumDeletedDataFiles, r.dataFiles)
	set(sumAddedEqDeleteFiles, a.eqDeleteFiles)
	set(sumRemovedEqDeleteFiles, r.eqDeleteFiles)
	set(sumAddedPosDeleteFiles, a.posDeleteFiles)
	set(sumRemovedPosDeleteFiles, r.posDeleteFiles)
	set(sumAddedDeleteFiles, a.deleteFiles)
	set(sumRemovedDeleteFiles, r.deleteFiles)
	set(sumAddedRecords, a.records)
	set(sumDeletedRecords, r.records)
	set(sumAddedPosDeletes, a.posDeletes)
	set(sumRemovedPosDeletes, r.posDeletes)
	set(sumAddedEqDeletes, a.eqDeletes)
	set(sumRemovedEqDeletes, r.eqDeletes)
	return p
}

// fileChangeSummary computes the added/removed part of a snapshot summary
// for files added and removed, with the per-partition entries iceberg-go
// adds when no more partitions changed than write.summary.partition-limit.
// Tested against iceberg-go's own summaries (summary_test.go).
func fileChangeSummary(meta table.Metadata, added, removed []iceberg.DataFile, partitionLimit int) (iceberg.Properties, error) {
	var total fileMetrics
	parts := map[string]*fileMetrics{}
	sc := meta.CurrentSchema()
	visit := func(df iceberg.DataFile, adding bool) error {
		apply := (*fileMetrics).remove
		if adding {
			apply = (*fileMetrics).add
		}
		if err := apply(&total, df); err != nil {
			return err
		}
		partition := df.Partition()
		if len(partition) == 0 {
			return nil
		}
		spec := meta.PartitionSpecByID(int(df.SpecID()))
		if spec == nil {
			return fmt.Errorf("file %s: unknown partition spec %d", df.FilePath(), df.SpecID())
		}
		path := spec.PartitionToPath(partitionRecord(partition, spec.PartitionType(sc)), sc)
		pm := parts[path]
		if pm == nil {
			pm = &fileMetrics{}
			parts[path] = pm
		}
		return apply(pm, df)
	}
	for _, df := range added {
		if err := visit(df, true); err != nil {
			return nil, err
		}
	}
	for _, df := range removed {
		if err := visit(df, false); err != nil {
			return nil, err
		}
	}
	props := total.props()
	if len(parts) > 0 {
		props[sumChangedPartitionCount] = strconv.Itoa(len(parts))
	}
	if len(parts) <= partitionLimit {
		for path, pm := range parts {
			p := pm.props()
			kv := make([]string, 0, len(p))
			for k, v := range p {
				kv = append(kv, k+"="+v)
			}
			if len(kv) > 0 {
				slices.Sort(kv)
				props[sumPartitionPrefix+path] = strings.Join(kv, ",")
			}
		}
	}
	return props, nil
}

// partitionValues are a data file's partition values in the order of the
// partition type's fields (an iceberg.StructLike), as iceberg-go renders
// partition paths from them.
type partitionValues []any

func (r partitionValues) Size() int     { return len(r) }
func (r partitionValues) Get(i int) any { return r[i] }
func (r partitionValues) Set(i int, v any) {
	r[i] = v
}

func partitionRecord(data map[int]any, typ *iceberg.StructType) partitionValues {
	out := make(partitionValues, len(typ.FieldList))
	for i, f := range typ.FieldList {
		out[i] = data[f.ID]
	}
	return out
}

// RebaseSummary turns a change summary (plus the job's own properties) into
// the full summary of a snapshot whose parent has summary previous: the
// total-* fields are the parent's plus what was added minus what was
// removed, and iceberg-go's environment properties (its version) come
// last, exactly as iceberg-go's snapshot producer orders them.
func RebaseSummary(op table.Operation, change, props, previous iceberg.Properties) table.Summary {
	out := maps.Clone(change)
	if out == nil {
		out = iceberg.Properties{}
	}
	maps.Copy(out, props)
	if previous == nil {
		previous = iceberg.Properties{
			SumTotalDataFiles: "0", SumTotalDeleteFiles: "0", SumTotalRecords: "0",
			SumTotalFileSize: "0", SumTotalPosDeletes: "0", SumTotalEqDeletes: "0",
		}
	}
	total := func(key, added, removed string) {
		n := previous.GetInt64(key, 0) + out.GetInt64(added, 0) - out.GetInt64(removed, 0)
		if n >= 0 {
			out[key] = strconv.FormatInt(n, 10)
		}
	}
	total(SumTotalDataFiles, sumAddedDataFiles, sumDeletedDataFiles)
	total(SumTotalDeleteFiles, sumAddedDeleteFiles, sumRemovedDeleteFiles)
	total(SumTotalRecords, sumAddedRecords, sumDeletedRecords)
	total(SumTotalFileSize, sumAddedFileSize, sumRemovedFileSize)
	total(SumTotalPosDeletes, sumAddedPosDeletes, sumRemovedPosDeletes)
	total(SumTotalEqDeletes, sumAddedEqDeletes, sumRemovedEqDeletes)
	maps.Copy(out, iceberg.EnvironmentContext())
	return table.Summary{Operation: op, Properties: out}
}
