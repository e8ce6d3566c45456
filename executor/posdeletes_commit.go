package executor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
)

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
