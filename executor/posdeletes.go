package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
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
	part   jobs.Partition
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

	// Format v3 (posdeletes_plan.go): the deletion vectors the partition's
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
func readSourceRows(ctx context.Context, fs iceio.IO, p jobs.Partition, src posDeleteSource, data map[string]liveDataFile,
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
// (replans), else it gives up (the conflict cool-down).
func (e *Executor) rewritePositionDeletes(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	rp := newReplans(job, maxRewriteReplans)
	for {
		res, rep := e.rewritePositionDeletesOnce(ctx, log, job)
		if rp.allowed(ctx) && e.lostToNewDeletes(log, job, res, &rep, rp.n) {
			rp.abandon(rep)
			continue
		}
		return rp.endRewrite(res, rep)
	}
}

// rewritePositionDeletesOnce is one plan of rewritePositionDeletes, written
// and committed.
func (e *Executor) rewritePositionDeletesOnce(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	var rep Report
	fail := func(outcome jobs.Outcome, err error) (jobs.Result, Report) {
		return jobs.Result{Outcome: outcome, Err: err}, rep
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return fail(jobs.Failed, fmt.Errorf("load table: %w", err))
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		log.Info("no position deletes to rewrite", "why", "table has no snapshot")
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	rep.PlannedFromSnapshotID = snap.SnapshotID
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(jobs.Failed, fmt.Errorf("open table io: %w", err))
	}

	data, byPartition, err := scanPositionDeletes(fs, tbl.Metadata(), snap, job.Partitions)
	if err != nil {
		return fail(jobs.Failed, err)
	}
	var merges []*deleteMerge
	for _, p := range job.Partitions {
		found := byPartition[p.Key]
		m, err := planDeleteMerge(ctx, fs, tbl, p, found, data, job)
		if err != nil {
			return fail(jobs.Failed, fmt.Errorf("plan partition %s: %w", p.Key, err))
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
		return jobs.Result{Outcome: jobs.Noop}, rep
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
		return jobs.Result{Outcome: jobs.Succeeded}, rep
	}

	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fail(jobs.Failed, errors.New("table io cannot write files"))
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
		return fail(jobs.Failed, err)
	}
	keepIntent := false
	defer func() { outputs.finish(log, keepIntent) }()
	cleanUp := func() {
		n, all := e.removeOwn(tbl, fs, written(), log)
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
			return fail(jobs.Failed, fmt.Errorf("write merged position deletes of %s: %w", m.part.Key, err))
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
		return fail(jobs.Failed, errCrashed)
	}
	committed, err := e.commitDeleteMerges(ctx, log, job, tbl, fs, merges, &rep)
	if err != nil {
		if errors.Is(err, errUnknownCommitState) {
			// A snapshot may reference the outputs: the intent stays for
			// the table's next look, which checks them against its history.
			log.Error("commit outcome unknown; merged delete files left in place for the table's next look", "error", err)
			keepIntent = true
			return fail(jobs.Failed, err)
		}
		cleanUp()
		log.Warn("position-delete rewrite abandoned; its output files were deleted", "error", err)
		if conflict.IsRetryable(err) {
			return fail(jobs.GaveUp, fmt.Errorf("gave up after %d attempts in %s: %w", rep.Attempts, job.Settings.CommitRetryTime, err))
		}
		if errors.Is(err, ErrNewDeletes) {
			// A race with a writer, not a fault: rewritePositionDeletes
			// plans again.
			return fail(jobs.GaveUp, fmt.Errorf("position-delete rewrite abandoned: %w", err))
		}
		return fail(jobs.Failed, fmt.Errorf("position-delete rewrite abandoned: %w", err))
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
	return jobs.Result{Outcome: jobs.Succeeded, Table: committed}, rep
}

// commitDeleteMerges replaces every partition's sources with its outputs in
// one snapshot, retrying lost races within the job's commit budget. Each
// attempt after the first reloads the table and checks, over only the
// snapshots committed since the last check, that no source was removed:
// the outputs hold every row of the sources, so they may replace them only
// while all of them are live. Deletes added by writers meanwhile are other
// files and stay. On format v2 tables the outputs' manifest and the
// sources' tombstones and manifest copies are written once
// (commitDeleteMergesStaged), and on v3 too, where the outputs are deletion
// vectors (iceberg-go's rewrite cannot remove two deletion vectors of one
// data file in one commit, which merging duplicates needs); on v1
// iceberg-go, which cannot replay a commit that removes delete files,
// re-stages the rewrite each time.
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
func (e *Executor) commitDeleteMerges(ctx context.Context, log *slog.Logger, job jobs.Job, planned *table.Table, fs iceio.IO,
	merges []*deleteMerge, rep *Report) (*table.Table, error) {
	if v := planned.Metadata().Version(); v == 2 || v == 3 {
		return e.commitDeleteMergesStaged(ctx, log, job, planned, fs, merges, rep)
	}
	sources := map[string]bool{}
	for _, m := range merges {
		for _, src := range m.remove {
			sources[src.file.FilePath()] = true
		}
	}
	props := iceberg.Properties{jobs.SnapshotJobProperty: job.ID}
	validatedID := planned.CurrentSnapshot().SnapshotID
	loop := commitLoop{e: e, log: log, job: job, rep: rep, first: planned}
	return loop.run(ctx, func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
		if cur := tbl.CurrentSnapshot(); cur == nil || cur.SnapshotID != validatedID {
			if err := sourcesRemovedSince(fs, tbl.Metadata(), validatedID, sources); err != nil {
				return nil, err
			}
			validatedID = cur.SnapshotID
		}
		if err := e.checkMetadataLog(tbl); err != nil {
			return nil, err
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
			return nil, fmt.Errorf("stage position-delete rewrite: %w", err)
		}
		staged := stagedFiles(txn, fs)
		next, err := txn.Commit(ctx)
		if err != nil {
			return nil, lost(err, planned, fs, staged, byJobID, 0)
		}
		return next, nil
	})
}

// sourcesRemovedSince reports commit.ErrInputsGone when a snapshot committed after
// baseID removed one of the sources (another rewrite, a compaction that
// found it dead, an expunge), and commit.ErrDiverged when baseID is no longer an
// ancestor (a rollback may have dropped sources too). Only the manifests
// each newer snapshot added are read.
func sourcesRemovedSince(fs iceio.IO, meta table.Metadata, baseID int64, sources map[string]bool) error {
	return commit.EntriesSince(fs, meta, baseID, true, func(snapID int64, entry iceberg.ManifestEntry) error {
		if entry.Status() == iceberg.EntryStatusDELETED && sources[entry.DataFile().FilePath()] {
			return fmt.Errorf("%w: snapshot %d removed position-delete file %s", commit.ErrInputsGone, snapID, entry.DataFile().FilePath())
		}
		return nil
	})
}

// writeDeleteMerge writes m's rows as position-delete files of m's
// partition, rolling to a new file every rowsPerFile rows.
func writeDeleteMerge(ctx context.Context, tbl *table.Table, wfs iceio.WriteFileIO, m *deleteMerge, writeID uuid.UUID) error {
	meta := tbl.Metadata()
	spec := meta.PartitionSpecByID(int(m.specID))
	if spec == nil {
		return fmt.Errorf("unknown partition spec %d", m.specID)
	}
	locate, err := datapath.PartitionLocation(tbl, spec, m.sample)
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(iceberg.PositionalDeleteSchema, nil, true, false)
	if err != nil {
		return fmt.Errorf("arrow schema: %w", err)
	}
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithCompression(datapath.DeleteCodec(meta.Properties())))
	for start := 0; start < len(m.rows); start += m.rowsPerFile {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := m.rows[start:min(start+m.rowsPerFile, len(m.rows))]
		path := locate(fmt.Sprintf("%s-%05d%s", writeID, len(m.written), mergedDeleteSuffix))
		m.written = append(m.written, path)
		size, fmeta, err := datapath.WritePositionDeleteFile(wfs, path, sc, props, len(rows), func(i int) (string, int64) {
			return m.paths[rows[i].file], rows[i].pos
		})
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
