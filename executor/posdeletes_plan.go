package executor

// Planning a position-delete rewrite: the scan of the live delete files of
// the job's partitions, and each partition's merge.

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/icereactor/reactor/jobs"
)

// scanPositionDeletes reads the current snapshot's manifests once: every
// live data file of the table (a delete row may name any of them), and the
// live position-delete files of the job's partitions.
func scanPositionDeletes(fs iceio.IO, meta table.Metadata, snap *table.Snapshot, parts []jobs.Partition) (map[string]liveDataFile, map[string]partitionDeletes, error) {
	want := make(map[string]int32, len(parts))
	for _, p := range parts {
		want[p.Key] = p.SpecID
	}
	keys := jobs.NewKeyer(meta)
	data := map[string]liveDataFile{}
	byPartition := map[string]partitionDeletes{}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, nil, fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			df := entry.DataFile()
			switch df.ContentType() {
			case iceberg.EntryContentData:
				data[df.FilePath()] = liveDataFile{specID: df.SpecID(), key: keys.Key(df.SpecID(), df.Partition()), seq: entry.SequenceNum(), rows: df.Count()}
			case iceberg.EntryContentPosDeletes:
				key := keys.Key(df.SpecID(), df.Partition())
				if spec, ok := want[key]; !ok || spec != df.SpecID() {
					continue
				}
				pd := byPartition[key]
				if entry.SequenceNum() < 0 && (table.IsDeletionVector(df) || df.FileFormat() == iceberg.ParquetFile) {
					return nil, nil, fmt.Errorf("delete file %s has no data sequence number", df.FilePath())
				}
				switch {
				case table.IsDeletionVector(df):
					pd.dvs++
					pd.dvFiles = append(pd.dvFiles, posDeleteSource{file: df, seq: entry.SequenceNum()})
				case df.FileFormat() != iceberg.ParquetFile:
					pd.otherFormats++
				default:
					pd.sources = append(pd.sources, posDeleteSource{file: df, seq: entry.SequenceNum()})
				}
				byPartition[key] = pd
			}
		}
	}
	return data, byPartition, nil
}

// planDeleteMerge reads one partition's sources and decides what the
// commit does with them: m.remove empty means the partition is left alone,
// and m.skip says why its sources are not merged.
//
// A source is excluded when one of its rows names a live data file of
// another (spec, partition): a file-scoped delete applies by path whatever
// its partition, a partition-scoped one does not apply there at all, and a
// merged partition-scoped file could turn one into the other. Rows naming
// data files no longer live are dropped (they apply to nothing and paths
// are never reused), and so are rows whose data file is newer than their
// delete file: they apply to nothing today, and at the merged file's higher
// sequence number they would.
func planDeleteMerge(ctx context.Context, fs iceio.IO, tbl *table.Table, p jobs.Partition, found partitionDeletes,
	data map[string]liveDataFile, job jobs.Job) (*deleteMerge, error) {
	if tbl.Metadata().Version() >= 3 {
		return planDVMerge(ctx, fs, p, found, data)
	}
	m := &deleteMerge{part: p}
	if len(found.sources) == 0 {
		m.skip = "no Parquet position-delete files"
		return m, nil
	}
	m.specID, m.values, m.sample = found.sources[0].file.SpecID(), found.sources[0].file.Partition(), found.sources[0].file
	intern := map[string]int32{}
	var (
		mergeable, appliesToNothing []sourceRows
		bytesIn, rowsIn             int64
	)
	for _, src := range found.sources {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sr, err := readSourceRows(ctx, fs, p, src, data, func(path string, _ liveDataFile, pos int64) (posDeleteRow, bool) {
			idx, ok := intern[path]
			if !ok {
				idx = int32(len(m.paths))
				intern[path] = idx
				m.paths = append(m.paths, path)
			}
			return posDeleteRow{file: idx, pos: pos}, true
		})
		if err != nil {
			return nil, err
		}
		bytesIn += src.file.FileSizeBytes()
		rowsIn += sr.total
		switch {
		case sr.foreign != "":
			m.excluded = append(m.excluded, src.file.FilePath())
		case len(sr.rows) == 0:
			appliesToNothing = append(appliesToNothing, sr)
		default:
			mergeable = append(mergeable, sr)
		}
	}

	minInputs := max(job.Settings.DeleteMinInputFiles, 1)
	target := job.Settings.DeleteTargetFileSize
	if target <= 0 {
		target = 64 << 20
	}
	// Bytes per row of the sources: Spark's estimate too. Small sources
	// carry a footer each, so it errs towards smaller outputs, never larger.
	m.rowsPerFile = 1
	if rowsIn > 0 && bytesIn > 0 {
		m.rowsPerFile = max(1, int(float64(target)/(float64(bytesIn)/float64(rowsIn))))
	}

	var (
		rows    int
		dropped int64
	)
	for _, sr := range mergeable {
		rows += len(sr.rows)
		dropped += sr.dangling + sr.ineffective
	}
	planned := (rows + m.rowsPerFile - 1) / m.rowsPerFile
	switch {
	case len(mergeable) == 0:
		if len(appliesToNothing) == 0 {
			m.skip = fmt.Sprintf("all %d position-delete files name data files of other partitions", len(found.sources))
		}
	case len(mergeable) < minInputs:
		m.skip = fmt.Sprintf("%d mergeable position-delete files, fewer than delete_min_input_files=%d", len(mergeable), minInputs)
	case planned >= len(mergeable) && dropped == 0:
		// Rewriting target-sized files into as many files gains nothing
		// and would be scheduled again on the next look.
		m.skip = fmt.Sprintf("%d position-delete files would merge into %d", len(mergeable), planned)
	default:
		for _, sr := range mergeable {
			m.rows = append(m.rows, sr.rows...)
			m.remove = append(m.remove, sr.src)
			m.dangling += sr.dangling
			m.ineffective += sr.ineffective
			m.seq = max(m.seq, sr.src.seq)
		}
		m.merged = len(mergeable)
	}
	if m.merged == 0 {
		m.rows, m.paths = nil, nil
	}
	// Files none of whose rows applies to anything go whatever the count
	// (Spark drops dangling deletes too), with no replacement: nothing to
	// rewrite, and a scan no longer opens them.
	for _, sr := range appliesToNothing {
		m.remove = append(m.remove, sr.src)
		m.dangling += sr.dangling
		m.ineffective += sr.ineffective
	}
	for _, src := range m.remove {
		m.removeBytes += src.file.FileSizeBytes()
	}
	m.sortRows()
	m.planned = (len(m.rows) + m.rowsPerFile - 1) / m.rowsPerFile
	return m, nil
}

// sortRows orders the rows by (file_path, pos), as the spec requires of a
// position-delete file, and drops duplicates (two sources deleting the same
// row).
func (m *deleteMerge) sortRows() {
	order := make([]int32, len(m.paths))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(m.paths[a], m.paths[b]) })
	rank := make([]int32, len(m.paths))
	sorted := make([]string, len(m.paths))
	for r, i := range order {
		rank[i] = int32(r)
		sorted[r] = m.paths[i]
	}
	for i := range m.rows {
		m.rows[i].file = rank[m.rows[i].file]
	}
	m.paths = sorted
	slices.SortFunc(m.rows, func(a, b posDeleteRow) int {
		if c := cmp.Compare(a.file, b.file); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	before := len(m.rows)
	m.rows = slices.Compact(m.rows)
	m.duplicates = int64(before - len(m.rows))
}
