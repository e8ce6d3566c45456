package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"time"

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
	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/planner"
)

// posFieldID is the reserved field id of a position delete's pos column.
const posFieldID = 2147483545

// mergedDeleteSuffix ends the name of every position-delete file this job
// writes, so a person (or a test) looking at a data directory can tell
// reactor's merged files from the writers' own.
const mergedDeleteSuffix = "-merged-deletes.parquet"

// deleteWriteBatchRows bounds the rows held in one Arrow batch (and so one
// Parquet row group) while writing a merged file: a 64 MiB delete file holds
// millions of (file_path, pos) rows and the paths dominate the memory.
const deleteWriteBatchRows = 1 << 18

// posDeleteSource is one live Parquet position-delete file with the data
// sequence number of its manifest entry.
type posDeleteSource struct {
	file iceberg.DataFile
	seq  int64
}

// liveDataFile is where a live data file sits: rows of a delete file that
// name it may be merged only within the same (spec, partition).
type liveDataFile struct {
	specID int32
	key    string
	seq    int64
}

// posDeleteRow is one (file_path, pos) row; file indexes the partition's
// interned path table, so millions of rows do not each carry a string.
type posDeleteRow struct {
	file int32
	pos  int64
}

// partitionDeletes is what the current snapshot holds for one partition of
// the job.
type partitionDeletes struct {
	sources      []posDeleteSource
	dvs          int // deletion vectors: one per data file already, nothing to merge
	otherFormats int // Parquet is all this job reads
}

// deleteMerge is the plan (and, once written, the outputs) of one
// partition's position-delete rewrite.
type deleteMerge struct {
	part   planner.Partition
	specID int32
	values map[int]any
	sample iceberg.DataFile // a source, for the partition's data directory
	// remove are the sources the commit removes: those merged into the
	// outputs plus those none of whose rows applies to anything (all
	// dangling or ineffective), which go without replacement.
	remove []posDeleteSource
	// merged is how many of remove contributed rows; seq is the maximum
	// data sequence number among them (see commitDeleteMerges).
	merged int
	seq    int64
	paths  []string // sorted; posDeleteRow.file indexes it
	rows   []posDeleteRow
	// rowsPerFile rolls the outputs near the delete target size.
	rowsPerFile int
	planned     int // output files the rows make

	removeBytes int64
	dangling    int64 // rows naming data files that are no longer live
	ineffective int64 // rows that do not apply today (data file newer than the delete)
	duplicates  int64
	excluded    []string // sources left alone: they name data files of other partitions
	skip        string   // why the partition's sources are not merged, if they are not

	outputs []iceberg.DataFile
	written []string // every path created, even a file that failed half way
}

// sourceRows is one source's rows, classified against the live data files.
type sourceRows struct {
	src         posDeleteSource
	rows        []posDeleteRow
	total       int64
	dangling    int64
	ineffective int64
	foreign     string // a live data file of another partition it names
}

// rewritePositionDeletes merges each job partition's live Parquet
// position-delete files into few files near the delete target size, like
// Spark's rewrite_position_delete_files: rows naming data files that are no
// longer live are dropped, the rest sorted by (file_path, pos), and the
// sources replaced by the outputs in one snapshot for the whole job. Data
// files are never touched, so every remaining delete must keep applying to
// exactly the rows it applies to now; each step below exists for that.
func (e *Executor) rewritePositionDeletes(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var rep Report
	fail := func(outcome planner.Outcome, err error) (planner.Result, Report) {
		return planner.Result{Outcome: outcome, Err: err}, rep
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return fail(planner.Failed, fmt.Errorf("load table: %w", err))
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		log.Info("no position deletes to rewrite", "why", "table has no snapshot")
		return planner.Result{Outcome: planner.Noop}, rep
	}
	rep.PlannedFromSnapshotID = snap.SnapshotID
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(planner.Failed, fmt.Errorf("open table io: %w", err))
	}

	data, byPartition, err := scanPositionDeletes(fs, tbl.Metadata(), snap, job.Partitions)
	if err != nil {
		return fail(planner.Failed, err)
	}
	var merges []*deleteMerge
	for _, p := range job.Partitions {
		found := byPartition[p.Key]
		m, err := planDeleteMerge(ctx, fs, tbl, p, found, data, job)
		if err != nil {
			return fail(planner.Failed, fmt.Errorf("plan partition %s: %w", p.Key, err))
		}
		rep.SkippedFiles += len(m.excluded)
		for _, path := range m.excluded {
			log.Info("position-delete file left untouched: it names data files of another partition",
				"partition", p.Key, "delete_file", path)
		}
		if m.skip != "" {
			log.Info("position-delete files not merged", "partition", p.Key, "why", m.skip,
				"position_delete_files", len(found.sources), "deletion_vectors", found.dvs, "non_parquet", found.otherFormats,
				"removed_without_replacement", len(m.remove)-m.merged)
		}
		if len(m.remove) == 0 {
			continue
		}
		log.Info("position deletes planned", "partition", p.Key, "sources", len(m.remove), "merged_sources", m.merged,
			"rows_kept", len(m.rows), "rows_dropped", m.dangling+m.ineffective+m.duplicates, "dangling_rows", m.dangling,
			"ineffective_rows", m.ineffective, "duplicate_rows", m.duplicates, "outputs", m.planned, "excluded", len(m.excluded))
		merges = append(merges, m)
	}
	if len(merges) == 0 {
		return planner.Result{Outcome: planner.Noop}, rep
	}
	// Counted as done only once committed (or, in a dry run, as planned).
	countRemoved := func() {
		for _, m := range merges {
			rep.RewrittenDeleteFiles += len(m.remove)
			rep.RewrittenDeleteBytes += m.removeBytes
			rep.DanglingDeleteRows += m.dangling
		}
	}

	if job.DryRun {
		// The sources were read, so the counts are exact; the outputs are
		// the planned number of files (their size is known only once
		// written).
		rep.DryRun = true
		countRemoved()
		for _, m := range merges {
			rep.AddedDeleteFiles += m.planned
		}
		return planner.Result{Outcome: planner.Succeeded}, rep
	}

	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fail(planner.Failed, errors.New("table io cannot write files"))
	}
	written := func() []string {
		var paths []string
		for _, m := range merges {
			paths = append(paths, m.written...)
		}
		return paths
	}
	writeID := uuid.New()
	for _, m := range merges {
		start := time.Now()
		if err := writeDeleteMerge(ctx, tbl, wfs, m, writeID); err != nil {
			rep.OutputFilesCleanedUp += removePaths(fs, written(), log)
			return fail(planner.Failed, fmt.Errorf("write merged position deletes of %s: %w", m.part.Key, err))
		}
		var bytes int64
		for _, out := range m.outputs {
			bytes += out.FileSizeBytes()
		}
		log.Info("position deletes merged, not yet committed", "partition", m.part.Key, "sources", len(m.remove),
			"rows_kept", len(m.rows), "rows_dropped", m.dangling+m.ineffective+m.duplicates, "outputs", len(m.outputs),
			"bytes_in", m.removeBytes, "bytes_out", bytes, "duration", time.Since(start).Round(time.Millisecond))
	}

	committed, err := e.commitDeleteMerges(ctx, log, job, tbl, fs, merges, &rep)
	if err != nil {
		if errors.Is(err, errUnknownCommitState) {
			// A snapshot may reference the outputs: orphan cleanup, with its
			// age margin, is their owner now.
			log.Error("commit outcome unknown; merged delete files left in place for orphan cleanup", "error", err)
			return fail(planner.Failed, err)
		}
		rep.OutputFilesCleanedUp += removePaths(fs, written(), log)
		log.Warn("position-delete rewrite abandoned; its output files were deleted", "error", err)
		if conflict.IsRetryable(err) {
			return fail(planner.GaveUp, fmt.Errorf("gave up after %d attempts in %s: %w", rep.Attempts, job.Settings.CommitRetryTime, err))
		}
		return fail(planner.Failed, fmt.Errorf("position-delete rewrite abandoned: %w", err))
	}
	rep.Commits = 1
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	countRemoved()
	for _, m := range merges {
		rep.AddedDeleteFiles += len(m.outputs)
		for _, out := range m.outputs {
			rep.AddedDeleteBytes += out.FileSizeBytes()
		}
	}
	log.Info("position deletes rewritten", "snapshot_id", rep.CommittedSnapshotID, "partitions", len(merges),
		"rewritten_delete_files", rep.RewrittenDeleteFiles, "added_delete_files", rep.AddedDeleteFiles,
		"rewritten_bytes", rep.RewrittenDeleteBytes, "added_bytes", rep.AddedDeleteBytes,
		"dangling_rows", rep.DanglingDeleteRows, "attempts", rep.Attempts, "conflicts", rep.Conflicts)
	return planner.Result{Outcome: planner.Succeeded, Table: committed}, rep
}

// scanPositionDeletes reads the current snapshot's manifests once: every
// live data file of the table (a delete row may name any of them), and the
// live position-delete files of the job's partitions.
func scanPositionDeletes(fs iceio.IO, meta table.Metadata, snap *table.Snapshot, parts []planner.Partition) (map[string]liveDataFile, map[string]partitionDeletes, error) {
	want := make(map[string]int32, len(parts))
	for _, p := range parts {
		want[p.Key] = p.SpecID
	}
	keys := planner.NewKeyer(meta)
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
				data[df.FilePath()] = liveDataFile{specID: df.SpecID(), key: keys.Key(df.SpecID(), df.Partition()), seq: entry.SequenceNum()}
			case iceberg.EntryContentPosDeletes:
				key := keys.Key(df.SpecID(), df.Partition())
				if spec, ok := want[key]; !ok || spec != df.SpecID() {
					continue
				}
				pd := byPartition[key]
				switch {
				case table.IsDeletionVector(df):
					pd.dvs++
				case df.FileFormat() != iceberg.ParquetFile:
					pd.otherFormats++
				default:
					if entry.SequenceNum() < 0 {
						return nil, nil, fmt.Errorf("delete file %s has no data sequence number", df.FilePath())
					}
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
func planDeleteMerge(ctx context.Context, fs iceio.IO, tbl *table.Table, p planner.Partition, found partitionDeletes,
	data map[string]liveDataFile, job planner.Job) (*deleteMerge, error) {
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
		sr := sourceRows{src: src}
		err := readPositionDeletes(ctx, fs, src.file.FilePath(), func(path string, pos int64) {
			sr.total++
			df, live := data[path]
			switch {
			case !live:
				sr.dangling++
			case df.specID != p.SpecID || df.key != p.Key:
				if sr.foreign == "" {
					sr.foreign = path
				}
			case df.seq > src.seq:
				sr.ineffective++
			default:
				idx, ok := intern[path]
				if !ok {
					idx = int32(len(m.paths))
					intern[path] = idx
					m.paths = append(m.paths, path)
				}
				sr.rows = append(sr.rows, posDeleteRow{file: idx, pos: pos})
			}
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", src.file.FilePath(), err)
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
	case tbl.Metadata().Version() >= 3:
		m.skip = fmt.Sprintf("format v%d: iceberg-go accepts only deletion vectors as new delete files", tbl.Metadata().Version())
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

// commitDeleteMerges replaces every partition's sources with its outputs in
// one snapshot, retrying lost races within the job's commit budget. Each
// attempt after the first reloads the table and checks, over only the
// snapshots committed since the last check, that no source was removed:
// the outputs hold every row of the sources, so they may replace them only
// while all of them are live. Deletes added by writers meanwhile are other
// files and stay. On format v2 tables the outputs' manifest and the
// sources' tombstones and manifest copies are written once
// (commitDeleteMergesStaged); on v1/v3 iceberg-go, which cannot replay a
// commit that removes delete files, re-stages the rewrite each time.
//
// Each output gets the maximum data sequence number of the sources merged
// into it. A position delete applies to data files with a sequence number
// at or below its own; every row of a source names a data file at or below
// that source's, so at the maximum every row still applies (at the minimum
// some would not: rows resurrect). iceberg-go's default for AddDeleteFile is
// the maximum over ALL delete files the rewrite removes, across partitions
// and including the dangling-only ones; that is still correct but needlessly
// high (a later compaction finds deletes dead only below their sequence
// number), so the sequence number is given per partition. iceberg-go accepts
// any sequence number of a removed file, which ours is.
func (e *Executor) commitDeleteMerges(ctx context.Context, log *slog.Logger, job planner.Job, planned *table.Table, fs iceio.IO,
	merges []*deleteMerge, rep *Report) (*table.Table, error) {
	if planned.Metadata().Version() == 2 {
		return e.commitDeleteMergesStaged(ctx, log, job, planned, fs, merges, rep)
	}
	sources := map[string]bool{}
	for _, m := range merges {
		for _, src := range m.remove {
			sources[src.file.FilePath()] = true
		}
	}
	props := iceberg.Properties{planner.SnapshotJobProperty: job.ID}
	validatedID := planned.CurrentSnapshot().SnapshotID
	var (
		committed    *table.Table
		attempt      int
		attemptStart time.Time
	)
	op := func() error {
		attempt++
		rep.Attempts++
		attemptStart = time.Now()
		tbl := planned
		if attempt > 1 {
			fresh, err := e.loadForAttempt(ctx, job)
			if err != nil {
				return err
			}
			tbl = fresh
		}
		if cur := tbl.CurrentSnapshot(); cur == nil || cur.SnapshotID != validatedID {
			if err := sourcesRemovedSince(fs, tbl.Metadata(), validatedID, sources); err != nil {
				return backoff.Permanent(err)
			}
			validatedID = cur.SnapshotID
		}
		txn := tbl.NewTransaction()
		rw := txn.NewRewrite(props)
		for _, m := range merges {
			for _, src := range m.remove {
				rw.DeleteFile(src.file)
			}
			for _, out := range m.outputs {
				rw.AddDeleteFileWithDataSequenceNumber(out, m.seq)
			}
		}
		if err := rw.Commit(ctx); err != nil {
			return backoff.Permanent(fmt.Errorf("stage position-delete rewrite: %w", err))
		}
		staged := stagedFiles(txn, fs)
		next, err := txn.Commit(ctx)
		if err == nil {
			committed = next
			return nil
		}
		if conflict.IsRetryable(err) {
			// Nothing references what this attempt staged (pitfall 6).
			rep.StagedMetadataCleanedUp += removePaths(fs, staged, log)
			return e.commitFailure(job, rep, "position-delete rewrite", err)
		}
		// The catalog may or may not have taken the commit. Look before
		// deciding; never delete what may be live.
		if landed := e.findCommitted(ctx, job); landed != nil {
			committed = landed
			return nil
		}
		return backoff.Permanent(unknownUnlessRefused(err))
	}
	if err := e.retryCommits(ctx, log, job, op, func() (int, time.Time) { return attempt, attemptStart }); err != nil {
		return nil, err
	}
	return committed, nil
}

// sourcesRemovedSince reports ErrInputsGone when a snapshot committed after
// baseID removed one of the sources (another rewrite, a compaction that
// found it dead, an expunge), and ErrDiverged when baseID is no longer an
// ancestor (a rollback may have dropped sources too). Only the manifests
// each newer snapshot added are read.
func sourcesRemovedSince(fs iceio.IO, meta table.Metadata, baseID int64, sources map[string]bool) error {
	return entriesSince(fs, meta, baseID, true, func(snapID int64, entry iceberg.ManifestEntry) error {
		if entry.Status() == iceberg.EntryStatusDELETED && sources[entry.DataFile().FilePath()] {
			return fmt.Errorf("%w: snapshot %d removed position-delete file %s", ErrInputsGone, snapID, entry.DataFile().FilePath())
		}
		return nil
	})
}
