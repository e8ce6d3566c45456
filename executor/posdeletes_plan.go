package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
)

// Planning a position-delete rewrite: the scan of the live delete files of
// the job's partitions, and each partition's merge (on format v3, into
// deletion vectors).

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

// mergedDVSuffix ends the name of every Puffin file the position-delete
// rewrite writes on a format v3 table.
const mergedDVSuffix = "-merged-dvs.puffin"

// ErrBadDeletionVector is a deletion vector the job cannot trust: its
// Puffin file or blob is unreadable, or it deletes a position past the end
// of its data file. The job fails and commits nothing.
var ErrBadDeletionVector = errors.New("bad deletion vector")

// dvTarget is one data file whose deletes the v3 rewrite writes as a single
// deletion vector: the union of its deletion vectors and of the rows of the
// partition's Parquet position-delete files that apply to it.
type dvTarget struct {
	path string
	// seq is the maximum data sequence number of the sources merged into
	// it: each of them applies to the data file (sequence number at or
	// below its own), so at the maximum the merged vector still does.
	seq    int64
	rows   int64 // the data file's record count
	dvs    []posDeleteSource
	parq   []int64 // positions from Parquet sources
	bitmap *dv.RoaringPositionBitmap
}

// planDVMerge is planDeleteMerge on a format v3 table, where the spec
// allows at most one deletion vector per data file and new position deletes
// are deletion vectors only (Iceberg 1.11 refuses a table with two for one
// data file). It plans, for one partition:
//
//   - every Parquet position-delete file (left from before an upgrade to v3)
//     rewritten into deletion vectors, one per data file; rows for a data
//     file that already has a deletion vector are dropped, as a reader
//     drops them (the spec: a writer adding a vector merges the file's
//     position deletes into it, so the vector alone applies);
//   - the deletion vectors of a data file that has two or more merged into
//     one;
//   - deletion vectors whose data file is no longer live (dangling) or
//     newer than the vector, and Parquet files none of whose rows applies
//     to anything, removed without replacement.
//
// A data file with exactly one deletion vector and no Parquet rows is left
// alone, so a second look plans nothing. The partition is left alone when
// a Parquet source names data files of another partition or a delete file
// is neither Parquet nor a deletion vector: a new deletion vector must
// replace every position-delete file that may apply to its data file.
func planDVMerge(ctx context.Context, fs iceio.IO, p jobs.Partition, found partitionDeletes,
	data map[string]liveDataFile) (*deleteMerge, error) {
	m := &deleteMerge{part: p, dv: true}
	if len(found.sources) == 0 && len(found.dvFiles) == 0 {
		m.skip = "no position-delete files or deletion vectors"
		return m, nil
	}
	if found.otherFormats > 0 {
		m.skip = fmt.Sprintf("%d position-delete files neither Parquet nor deletion vectors: a deletion vector would have to replace them", found.otherFormats)
		return m, nil
	}
	sample := found.dvFiles
	if len(found.sources) > 0 {
		sample = found.sources
	}
	m.specID, m.values, m.sample = sample[0].file.SpecID(), sample[0].file.Partition(), sample[0].file

	targets := map[string]*dvTarget{}
	target := func(path string, df liveDataFile) *dvTarget {
		t, ok := targets[path]
		if !ok {
			t = &dvTarget{path: path, rows: df.rows}
			targets[path] = t
		}
		return t
	}
	var deadDVs []posDeleteSource
	hasDV := map[string]bool{}
	for _, d := range found.dvFiles {
		ref := d.file.ReferencedDataFile()
		if ref == nil {
			return nil, fmt.Errorf("%w: %s has no referenced_data_file", ErrBadDeletionVector, commit.FileKey(d.file))
		}
		df, live := data[*ref]
		switch {
		case !live:
			deadDVs = append(deadDVs, d)
			m.dangling += d.file.Count()
		case df.specID != p.SpecID || df.key != p.Key:
			return nil, fmt.Errorf("%w: %s is in partition %s, its data file %s in %s", ErrBadDeletionVector,
				commit.FileKey(d.file), p.Key, *ref, df.key)
		case df.seq > d.seq:
			deadDVs = append(deadDVs, d)
			m.ineffective += d.file.Count()
		default:
			t := target(*ref, df)
			t.dvs = append(t.dvs, d)
			t.seq = max(t.seq, d.seq)
			hasDV[*ref] = true
		}
	}

	var mergeable, appliesToNothing []sourceRows
	for _, src := range found.sources {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sr, err := readSourceRows(ctx, fs, p, src, data, func(path string, df liveDataFile, pos int64) (posDeleteRow, bool) {
			if hasDV[path] {
				// The spec's reader rule: a data file's deletion vector
				// replaces its position-delete files (a writer adding one
				// merges them in), so these rows no longer apply.
				return posDeleteRow{}, false
			}
			t := target(path, df)
			t.parq = append(t.parq, pos)
			t.seq = max(t.seq, src.seq)
			return posDeleteRow{pos: pos}, true
		})
		if err != nil {
			return nil, err
		}
		switch {
		case sr.foreign != "":
			m.excluded = append(m.excluded, src.file.FilePath())
		case len(sr.rows) == 0:
			appliesToNothing = append(appliesToNothing, sr)
		default:
			mergeable = append(mergeable, sr)
		}
	}
	if len(m.excluded) > 0 {
		m.skip = fmt.Sprintf("%d position-delete files name data files of other partitions: the deletion vectors of this partition "+
			"would leave them applying", len(m.excluded))
		return m, nil
	}

	for _, t := range targets {
		if len(t.parq) == 0 && len(t.dvs) < 2 {
			continue // one deletion vector and nothing to merge into it
		}
		if err := t.merge(ctx, fs); err != nil {
			return nil, err
		}
		m.targets = append(m.targets, t)
		m.remove = append(m.remove, t.dvs...)
		m.merged += len(t.dvs)
	}
	slices.SortFunc(m.targets, func(a, b *dvTarget) int { return cmp.Compare(a.path, b.path) })
	for _, sr := range mergeable {
		m.remove = append(m.remove, sr.src)
		m.dangling += sr.dangling
		m.ineffective += sr.ineffective
	}
	m.merged += len(mergeable)
	for _, sr := range appliesToNothing {
		m.remove = append(m.remove, sr.src)
		m.dangling += sr.dangling
		m.ineffective += sr.ineffective
	}
	m.remove = append(m.remove, deadDVs...)
	for _, src := range m.remove {
		if table.IsDeletionVector(src.file) {
			if n := src.file.ContentSizeInBytes(); n != nil {
				m.removeBytes += *n
			}
			continue
		}
		m.removeBytes += src.file.FileSizeBytes()
	}
	if len(m.targets) > 0 {
		m.planned = 1 // one Puffin file for the partition's vectors
	}
	if len(m.remove) == 0 {
		m.skip = "one deletion vector per data file, none dangling, no Parquet position deletes"
	}
	return m, nil
}

// merge reads t's deletion vectors and unions them with its Parquet rows.
// A vector that cannot be read, or a position past the end of the data
// file, is refused: merging it would carry a corrupt delete into the new
// vector, or delete rows nobody asked to delete.
func (t *dvTarget) merge(ctx context.Context, fs iceio.IO) error {
	t.bitmap = dv.NewRoaringPositionBitmap()
	var added int64
	for _, d := range t.dvs {
		if err := ctx.Err(); err != nil {
			return err
		}
		bm, err := dv.ReadDV(fs, d.file)
		if err != nil {
			return fmt.Errorf("%w: read %s of %s: %w", ErrBadDeletionVector, commit.FileKey(d.file), t.path, err)
		}
		added += bm.Cardinality()
		t.bitmap.Or(bm)
	}
	for _, pos := range t.parq {
		if pos < 0 {
			return fmt.Errorf("%w: position %d of %s is negative", ErrBadDeletionVector, pos, t.path)
		}
		t.bitmap.Set(uint64(pos))
	}
	added += int64(len(t.parq))
	t.parq = nil
	var last uint64
	for pos := range t.bitmap.Positions() {
		last = max(last, pos)
	}
	if !t.bitmap.IsEmpty() && t.rows >= 0 && last >= uint64(t.rows) {
		return fmt.Errorf("%w: position %d deleted in %s, which has %d rows", ErrBadDeletionVector, last, t.path, t.rows)
	}
	return nil
}

// writeDVMerge writes m's merged deletion vectors into one Puffin file in
// the partition's data directory, through iceberg-go's DV writer (the
// spec's deletion-vector-v1 blobs, each with its cardinality and
// referenced data file).
func writeDVMerge(ctx context.Context, tbl *table.Table, wfs iceio.WriteFileIO, m *deleteMerge, writeID uuid.UUID) error {
	if len(m.targets) == 0 {
		return nil
	}
	meta := tbl.Metadata()
	spec := meta.PartitionSpecByID(int(m.specID))
	if spec == nil {
		return fmt.Errorf("unknown partition spec %d", m.specID)
	}
	locate, err := datapath.PartitionLocation(tbl, spec, m.sample)
	if err != nil {
		return err
	}
	w := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	seqs := make(map[string]int64, len(m.targets))
	for _, t := range m.targets {
		w.Load(t.path, t.bitmap, m.specID, m.values)
		seqs[t.path] = t.seq
	}
	path := locate(fmt.Sprintf("%s-%05d%s", writeID, len(m.written), mergedDVSuffix))
	m.written = append(m.written, path)
	if err := ctx.Err(); err != nil {
		return err
	}
	outs, err := w.Flush(ctx, path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	for _, out := range outs {
		ref := out.ReferencedDataFile()
		if ref == nil {
			return fmt.Errorf("write %s: a deletion vector without its data file", path)
		}
		m.outputs = append(m.outputs, out)
		m.outSeqs = append(m.outSeqs, seqs[*ref])
	}
	return nil
}
