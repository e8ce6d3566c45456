package executor

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/jobs"
)

// commitBatchReplay is the commit path for format v1 and v3 tables (and
// rewrites that remove deletion vectors): the already written outputs are
// staged again through iceberg-go's RewriteFiles on every attempt, retrying
// conflicts until the job's commit budget runs out. Each attempt reloads
// the table, re-validates against everything committed since the outputs
// were read, recomputes which position-delete files die with the rewrite,
// and lets iceberg-go re-read and re-write the manifests: its cost grows
// with the table's manifests, which commitBatch's staged path avoids.
//
// planned is the table the outputs were read from: validation starts there.
// head is the table the first attempt commits on.
//
// eqDeletes are the equality deletes that applied to the inputs when they
// were read: those the rewrite leaves applying to nothing go in the same
// commit.
func (e *Executor) commitBatchReplay(ctx context.Context, log *slog.Logger, job jobs.Job, planned, head *table.Table, fs iceio.IO,
	results []table.CompactionGroupResult, eqDeletes map[string]iceberg.DataFile, extraProps iceberg.Properties, rep *Report) (*table.Table, error) {
	var (
		oldFiles, newFiles []iceberg.DataFile
		candidates         = map[string]iceberg.DataFile{}
		bytesIn, bytesOut  int64
	)
	rewritten := map[string]struct{}{}
	for _, gr := range results {
		oldFiles = append(oldFiles, gr.OldDataFiles...)
		newFiles = append(newFiles, gr.NewDataFiles...)
		bytesIn += gr.BytesBefore
		bytesOut += gr.BytesAfter
		for _, df := range gr.OldDataFiles {
			rewritten[df.FilePath()] = struct{}{}
		}
		for _, d := range gr.SafePosDeletes {
			candidates[commit.FileKey(d)] = d
		}
		// Keyed by FileKey: one Puffin file holds the vectors of every
		// data file a writer's delete touched, and keyed by path all but
		// one would stay behind, dangling.
		for _, d := range gr.SafeDeletionVectors {
			candidates[commit.FileKey(d)] = d
		}
	}
	inputs := commit.NewRewriteInputs(planned.Metadata(), oldFiles)
	validatedID := planned.CurrentSnapshot().SnapshotID
	props := iceberg.Properties{jobs.SnapshotJobProperty: job.ID}
	maps.Copy(props, extraProps)

	loop := commitLoop{e: e, log: log, job: job, rep: rep, first: head, reloadAnyError: true}
	var removed int
	committed, err := loop.run(ctx, func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
		if tbl.CurrentSnapshot() == nil || tbl.CurrentSnapshot().SnapshotID != validatedID {
			// Validation is monotonic along the ancestry: only snapshots
			// committed since the last attempt need reading, so an attempt
			// stays cheap however long the writer has been busy.
			if err := commit.CheckSince(fs, tbl.Metadata(), validatedID, inputs); err != nil {
				return nil, err
			}
			validatedID = tbl.CurrentSnapshot().SnapshotID
		}
		// Only position deletes that are dead in the snapshot being
		// committed on may go: a partition-scoped delete that still
		// applies to a file outside the rewrite stays (docs/design.md#pitfall-resurrected-deletes).
		dead, err := table.CollectDeadPositionDeletes(ctx, fs, tbl.CurrentSnapshot(), rewritten)
		if err != nil {
			return nil, fmt.Errorf("collect dead position deletes: %w", err)
		}
		deadPaths := make(map[string]bool, len(dead))
		for _, d := range dead {
			deadPaths[d.FilePath()] = true
		}
		// Equality deletes die when no surviving data file older than
		// them remains in their partition (the whole table for an
		// unpartitioned spec): iceberg-go never drops them by itself.
		var deadEq []iceberg.DataFile
		if len(eqDeletes) > 0 {
			found, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot(), rewritten)
			if err != nil {
				return nil, fmt.Errorf("collect dead equality deletes: %w", err)
			}
			for _, d := range found {
				if _, ours := eqDeletes[d.FilePath()]; ours {
					deadEq = append(deadEq, d)
				}
			}
		}
		if err := e.checkMetadataLog(tbl); err != nil {
			return nil, err
		}
		txn := tbl.NewTransaction()
		rw := txn.NewRewrite(props)
		for _, df := range oldFiles {
			rw.DeleteFile(df)
		}
		for _, df := range newFiles {
			rw.AddDataFile(df)
		}
		removed = 0
		for path, d := range candidates {
			if deadPaths[path] || table.IsDeletionVector(d) {
				rw.DeleteFile(d)
				removed++
			}
		}
		for _, d := range deadEq {
			rw.DeleteFile(d)
			removed++
		}
		if err := rw.Commit(ctx); err != nil {
			return nil, fmt.Errorf("stage rewrite: %w", err)
		}
		staged := stagedFiles(txn, fs)
		next, err := txn.Commit(ctx)
		if err != nil {
			return nil, lost(err, planned, fs, staged, byJobID, 0)
		}
		return next, nil
	})
	if err != nil {
		if conflict.IsRetryable(err) {
			return nil, fmt.Errorf("gave up after %d attempts in %s: %w", loop.n, job.Settings.CommitRetryTime, err)
		}
		return nil, err
	}
	rep.Commits++
	rep.RewrittenDataFiles += len(oldFiles)
	rep.AddedDataFiles += len(newFiles)
	rep.RewrittenBytes += bytesIn
	rep.AddedBytes += bytesOut
	rep.RemovedDeleteFiles += removed
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	e.met.FilesRewritten.WithLabelValues(job.Table.String()).Add(float64(len(oldFiles)))
	e.met.FilesAdded.WithLabelValues(job.Table.String()).Add(float64(len(newFiles)))
	return committed, nil
}

// stagedFiles lists the manifest list and manifests a staged transaction
// wrote for its new snapshot: if the commit loses, nothing references them
// and reactor deletes them itself (docs/design.md#pitfall-failed-attempt-garbage) instead of leaving them to
// orphan cleanup.
func stagedFiles(txn *table.Transaction, fs iceio.IO) []string {
	st, err := txn.StagedTable()
	if err != nil {
		return nil
	}
	snap := st.Metadata().CurrentSnapshot()
	if snap == nil {
		return nil
	}
	paths := []string{snap.ManifestList}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return paths
	}
	for _, m := range manifests {
		if m.SnapshotID() == snap.SnapshotID {
			paths = append(paths, m.FilePath())
		}
	}
	return paths
}

// stagedSnapshotID is the id of the snapshot txn staged (0 when it staged
// none): after an ambiguous commit error, the one to look up.
func stagedSnapshotID(txn *table.Transaction) int64 {
	st, err := txn.StagedTable()
	if err != nil || st.CurrentSnapshot() == nil {
		return 0
	}
	return st.CurrentSnapshot().SnapshotID
}
