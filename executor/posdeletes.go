package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/planner"
)

// mergedDeleteSuffix ends the name of every position-delete file this job
// writes, so a person (or a test) looking at a data directory can tell
// reactor's merged files from the writers' own.
const mergedDeleteSuffix = "-merged-deletes.parquet"

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
	rows   int64 // its record count: a deleted position must be below it
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
	sources []posDeleteSource
	// dvFiles are the deletion vectors (format v3): each is one blob of a
	// Puffin file, so several may share a path.
	dvFiles      []posDeleteSource
	dvs          int
	otherFormats int // Parquet (and, on v3, Puffin) is all this job reads
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

	// Format v3 (posdeletes_dv.go): the deletion vectors the partition's
	// Parquet sources and duplicate deletion vectors are merged into, one
	// per data file, and each output's data sequence number (outputs[i]
	// at outSeqs[i]).
	dv      bool
	targets []*dvTarget
	outSeqs []int64
}

// keptRows is the number of deleted positions the outputs hold.
func (m *deleteMerge) keptRows() int64 {
	if !m.dv {
		return int64(len(m.rows))
	}
	var n int64
	for _, t := range m.targets {
		n += t.bitmap.Cardinality()
	}
	return n
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

// readSourceRows reads the position-delete file src of partition p and
// sorts its rows: those naming a data file no longer live (dangling), one
// of another partition (foreign: the first is kept), or one newer than the
// delete file (ineffective) are counted; every other row goes to take,
// which returns the row to keep, or false when it applies to nothing
// (counted ineffective).
func readSourceRows(ctx context.Context, fs iceio.IO, p planner.Partition, src posDeleteSource, data map[string]liveDataFile,
	take func(path string, df liveDataFile, pos int64) (posDeleteRow, bool)) (sourceRows, error) {
	sr := sourceRows{src: src}
	err := datapath.ReadPositionDeletes(ctx, fs, src.file.FilePath(), func(path string, pos int64) {
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
			if row, ok := take(path, df, pos); ok {
				sr.rows = append(sr.rows, row)
			} else {
				sr.ineffective++
			}
		}
	})
	if err != nil {
		return sr, fmt.Errorf("read %s: %w", src.file.FilePath(), err)
	}
	return sr, nil
}

// rewritePositionDeletes merges each job partition's live Parquet
// position-delete files into few files near the delete target size, like
// Spark's rewrite_position_delete_files: rows naming data files that are no
// longer live are dropped, the rest sorted by (file_path, pos), and the
// sources replaced by the outputs in one snapshot for the whole job. Data
// files are never touched, so every remaining delete must keep applying to
// exactly the rows it applies to now; each step below exists for that.
//
// On format v3 a writer's new deletion vector for a data file whose
// vectors the job merges (ErrNewDeletes) makes the job's vector a second
// one: the outputs are deleted and the job plans again, the writer's
// vector then among those merged, at most maxRewriteReplans times
// (replanned), else it gives up (the conflict cool-down).
func (e *Executor) rewritePositionDeletes(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	res, rep, replans := e.replanned(ctx, job, maxRewriteReplans, func() (planner.Result, Report) {
		return e.rewritePositionDeletesOnce(ctx, log, job)
	}, e.replanOnNewDeletes(log, job))
	if replans > 0 && res.Outcome == planner.GaveUp && errors.Is(res.Err, ErrNewDeletes) {
		res.Err = fmt.Errorf("gave up after %d re-plans: %w", replans, res.Err)
	}
	return res, rep
}

// rewritePositionDeletesOnce is one plan of rewritePositionDeletes, written
// and committed.
func (e *Executor) rewritePositionDeletesOnce(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
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
			"rows_kept", m.keptRows(), "deletion_vectors_out", len(m.targets), "rows_dropped", m.dangling+m.ineffective+m.duplicates, "dangling_rows", m.dangling,
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
	// The job's output token: every merged file's name starts with it.
	writeID := uuid.New()
	e.recoverOutputsBefore(ctx, log, tbl, fs)
	ctx, outputs, err := e.beginOutputs(ctx, tbl, fs, job, writeID.String())
	if err != nil {
		return fail(planner.Failed, err)
	}
	keepIntent := false
	defer func() { outputs.finish(log, keepIntent) }()
	cleanUp := func() {
		n, all := removeAll(fs, written(), log)
		rep.OutputFilesCleanedUp += n
		keepIntent = keepIntent || !all
	}
	for _, m := range merges {
		start := time.Now()
		write := writeDeleteMerge
		if m.dv {
			write = writeDVMerge
		}
		if err := write(ctx, tbl, wfs, m, writeID); err != nil {
			cleanUp()
			return fail(planner.Failed, fmt.Errorf("write merged position deletes of %s: %w", m.part.Key, err))
		}
		var bytes int64
		for _, out := range m.outputs {
			bytes += out.FileSizeBytes()
		}
		log.Info("position deletes merged, not yet committed", "partition", m.part.Key, "sources", len(m.remove),
			"rows_kept", m.keptRows(), "rows_dropped", m.dangling+m.ineffective+m.duplicates, "outputs", len(m.outputs),
			"bytes_in", m.removeBytes, "bytes_out", bytes, "duration", time.Since(start).Round(time.Millisecond))
	}

	if e.crashed("before-commit") {
		keepIntent = true
		return fail(planner.Failed, errCrashed)
	}
	committed, err := e.commitDeleteMerges(ctx, log, job, tbl, fs, merges, &rep)
	if err != nil {
		if errors.Is(err, errUnknownCommitState) {
			// A snapshot may reference the outputs: the intent stays for
			// the table's next look, which checks them against its history.
			log.Error("commit outcome unknown; merged delete files left in place for the table's next look", "error", err)
			keepIntent = true
			return fail(planner.Failed, err)
		}
		cleanUp()
		log.Warn("position-delete rewrite abandoned; its output files were deleted", "error", err)
		if conflict.IsRetryable(err) {
			return fail(planner.GaveUp, fmt.Errorf("gave up after %d attempts in %s: %w", rep.Attempts, job.Settings.CommitRetryTime, err))
		}
		if errors.Is(err, ErrNewDeletes) {
			// A race with a writer, not a fault: rewritePositionDeletes
			// plans again.
			return fail(planner.GaveUp, fmt.Errorf("position-delete rewrite abandoned: %w", err))
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
func planDeleteMerge(ctx context.Context, fs iceio.IO, tbl *table.Table, p planner.Partition, found partitionDeletes,
	data map[string]liveDataFile, job planner.Job) (*deleteMerge, error) {
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
