package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/jobs"
)

// Reasons a rewrite can no longer be committed as it is (commit
// validation, package commit): the outputs themselves are stale, so the
// batch is abandoned and its outputs deleted. Callers match them with
// errors.Is.
var (
	// ErrInputsGone: a concurrent commit removed one of the rewrite's
	// input files (another rewrite or an overwrite got there first).
	ErrInputsGone = commit.ErrInputsGone
	// ErrNewDeletes: a concurrent commit added deletes that apply to the
	// rewrite's inputs; committing the outputs would resurrect those rows.
	ErrNewDeletes = commit.ErrNewDeletes
	// ErrDiverged: the snapshot the rewrite was planned on is no longer an
	// ancestor of the current one (rollback, or expired under us).
	ErrDiverged = commit.ErrDiverged
)

// commitBatch commits the already written outputs of one batch, retrying
// conflicts until the job's commit budget runs out. The outputs' manifest,
// the tombstones of the inputs and copies of the manifests that held them
// are written once; an attempt after a conflict reads only the snapshots
// committed since the previous one, re-validates against them and writes a
// new manifest list (commit.Staged). Format v1 and v3 tables go through
// commitBatchReplay.
//
// planned is the table the outputs were read from: validation starts there.
// head is the table the first attempt commits on.
//
// eqDeletes are the equality deletes that applied to the inputs when they
// were read: those the rewrite leaves applying to nothing go in the same
// commit, as do the position deletes it leaves applying to nothing.
func (e *Executor) commitBatch(ctx context.Context, log *slog.Logger, job jobs.Job, planned, head *table.Table, fs iceio.IO,
	results []table.CompactionGroupResult, eqDeletes map[string]iceberg.DataFile, extraProps iceberg.Properties, rep *Report) (*table.Table, error) {
	if e.replayCommits || !stagedCommits(head.Metadata(), results) {
		return e.commitBatchReplay(ctx, log, job, planned, head, fs, results, eqDeletes, extraProps, rep)
	}
	var (
		oldFiles, newFiles []iceberg.DataFile
		bytesIn, bytesOut  int64
	)
	always := map[string]iceberg.DataFile{}
	optional := map[string]iceberg.DataFile{}
	for _, gr := range results {
		oldFiles = append(oldFiles, gr.OldDataFiles...)
		newFiles = append(newFiles, gr.NewDataFiles...)
		bytesIn += gr.BytesBefore
		bytesOut += gr.BytesAfter
		for _, df := range gr.OldDataFiles {
			always[df.FilePath()] = df
		}
		for _, d := range gr.SafePosDeletes {
			optional[d.FilePath()] = d
		}
	}
	maps.Copy(optional, eqDeletes)
	inputs := commit.NewRewriteInputs(planned.Metadata(), oldFiles)
	if base := planned.CurrentSnapshot().SnapshotID; head.CurrentSnapshot().SnapshotID != base {
		// Our own previous batch (partial progress) or a refresh: what was
		// committed since the outputs were read must not conflict.
		if err := commit.CheckSince(fs, head.Metadata(), base, inputs); err != nil {
			return nil, err
		}
	}
	props := iceberg.Properties{jobs.SnapshotJobProperty: job.ID}
	maps.Copy(props, extraProps)
	st := &commit.Staged{
		FS: fs, Op: table.OpReplace, Props: props,
		AddData: newFiles, Always: always, Optional: optional,
		DataTracked: true, Validate: inputs.ConflictsWith,
	}
	committed, err := e.commitStaged(ctx, log, job, head, fs, st, rep, "rewrite")
	if err != nil {
		if conflict.IsRetryable(err) {
			return nil, fmt.Errorf("gave up after %d attempts in %s: %w", rep.Attempts, job.Settings.CommitRetryTime, err)
		}
		return nil, err
	}
	rep.rewriteCommitted(committed, len(oldFiles), len(newFiles), bytesIn, bytesOut, st.RemovedDeleteFiles())
	e.met.FilesRewritten.WithLabelValues(job.Table.String()).Add(float64(len(oldFiles)))
	e.met.FilesAdded.WithLabelValues(job.Table.String()).Add(float64(len(newFiles)))
	return committed, nil
}

// stagedCommits reports whether a rewrite commits through commit.Staged:
// format v2, and no deletion vectors to remove (v3 only, where a Puffin
// file holds the vectors of several data files and removal goes by
// referenced data file).
func stagedCommits(meta table.Metadata, results []table.CompactionGroupResult) bool {
	if meta.Version() != 2 {
		return false
	}
	for _, gr := range results {
		if len(gr.SafeDeletionVectors) > 0 {
			return false
		}
	}
	return true
}

// commitStaged prepares st on head (reading head's manifests once) and
// commits it on the catalog's current head through the commit loop. Every
// failed attempt's manifest list is deleted at once; the manifests st
// wrote once are deleted only when the commit definitively did not land,
// and never when its outcome is unknown (errUnknownCommitState).
func (e *Executor) commitStaged(ctx context.Context, log *slog.Logger, job jobs.Job, head *table.Table, fs iceio.IO,
	st *commit.Staged, rep *Report, what string) (*table.Table, error) {
	sw, err := commit.NewSnapshotWriter(head, fs)
	if err != nil {
		return nil, err
	}
	st.Writer = sw
	start := time.Now()
	if err := st.Prepare(ctx, head); err != nil {
		rep.StagedMetadataCleanedUp += e.removePaths(head, fs, append(st.Superseded(), st.OwnManifests()...), log)
		return nil, err
	}
	log.Debug("rewrite staged", "manifests_read", st.Opened(), "manifests_written", len(st.OwnManifests()),
		"duration", time.Since(start).Round(time.Millisecond))
	sc := &stagedCommit{st: st, sw: sw, head: head, fs: fs, what: what}
	sc.loop = commitLoop{e: e, log: log, job: job, rep: rep, files: sc}
	return sc.loop.run(ctx, sc.attempt)
}

// stagedCommit is one commit.Staged's way through the commit loop.
type stagedCommit struct {
	loop commitLoop
	st   *commit.Staged
	sw   *commit.SnapshotWriter
	head *table.Table
	fs   iceio.IO
	what string
}

// attempt commits on tbl, the catalog's head: every attempt, the first
// included, starts from it, since a busy writer has committed since the
// outputs were written, and reading its commits costs less than losing.
func (sc *stagedCommit) attempt(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	st, log, n := sc.st, sc.loop.log, sc.loop.n
	opened := st.Opened()
	if err := st.Advance(tbl.Metadata()); err != nil {
		return nil, err
	}
	manifests, err := st.ManifestsFor(tbl.Metadata())
	if errors.Is(err, commit.ErrRescan) {
		log.Info("manifests changed under the rewrite; reading the current snapshot again", "attempt", n, "why", err)
		if err := st.Prepare(ctx, tbl); err != nil {
			return nil, err
		}
		manifests, err = st.ManifestsFor(tbl.Metadata())
	}
	if err != nil {
		return nil, err
	}
	summary, err := st.Summary(tbl.Metadata())
	if err != nil {
		return nil, err
	}
	res, err := sc.sw.Commit(ctx, sc.loop.e.cat, tbl, n-1, manifests, summary)
	log.Debug("commit attempt", "attempt", n, "manifests_read", st.Opened()-opened,
		"duration", time.Since(sc.loop.started).Round(time.Microsecond), "error", err)
	switch {
	case err == nil:
		sc.loop.e.removeOwn(res.Committed, sc.fs, res.DroppedMetadata, log)
		return res.Committed, nil
	case res.List == "":
		return nil, fmt.Errorf("stage %s: %w", sc.what, err)
	}
	return nil, lost(err, sc.head, sc.fs, []string{res.List}, bySnapshotID, sc.sw.SnapshotID)
}

func (sc *stagedCommit) where() (*table.Table, iceio.IO) { return sc.head, sc.fs }
func (sc *stagedCommit) own() []string                   { return sc.st.OwnManifests() }
func (sc *stagedCommit) superseded() []string            { return sc.st.Superseded() }

// commitDeleteMergesStaged is commitDeleteMerges through commit.Staged:
// the sources must all still be live, and only delete manifests are read.
func (e *Executor) commitDeleteMergesStaged(ctx context.Context, log *slog.Logger, job jobs.Job, planned *table.Table, fs iceio.IO,
	merges []*deleteMerge, rep *Report) (*table.Table, error) {
	st := &commit.Staged{
		FS: fs, Op: table.OpReplace,
		Props:  iceberg.Properties{jobs.SnapshotJobProperty: job.ID},
		Always: map[string]iceberg.DataFile{},
	}
	targets := map[string]bool{}
	for _, m := range merges {
		for _, src := range m.remove {
			st.Always[commit.FileKey(src.file)] = src.file
		}
		for i, out := range m.outputs {
			seq := m.seq
			if m.dv {
				seq = m.outSeqs[i]
			}
			st.AddDeletes = append(st.AddDeletes, commit.DeleteAddition{File: out, Seq: seq})
		}
		for _, t := range m.targets {
			targets[t.path] = true
		}
	}
	if len(targets) > 0 {
		// A deletion vector replaces every delete of its data file: a
		// writer's new vector for one of them since the plan would be a
		// second one (or lost), and a data file removed since would leave
		// ours dangling. Either ends the job; the next look plans again.
		st.DataTracked = true
		st.Validate = func(snapID int64, entry iceberg.ManifestEntry) error {
			df := entry.DataFile()
			switch {
			case entry.Status() == iceberg.EntryStatusDELETED && df.ContentType() == iceberg.EntryContentData && targets[df.FilePath()]:
				return fmt.Errorf("%w: snapshot %d removed data file %s", commit.ErrInputsGone, snapID, df.FilePath())
			case entry.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentPosDeletes:
				if ref := commit.ReferencedDataFile(df); ref != "" && targets[ref] {
					return commit.NewDeletesBy(snapID, fmt.Sprintf("added position deletes %s for %s", commit.FileKey(df), ref))
				}
			}
			return nil
		}
	}
	return e.commitStaged(ctx, log, job, planned, fs, st, rep, "position-delete rewrite")
}

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
	rep.rewriteCommitted(committed, len(oldFiles), len(newFiles), bytesIn, bytesOut, removed)
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

// rewriteCommitted counts one committed batch of a data rewrite, whichever
// path (staged or replayed) committed it.
func (rep *Report) rewriteCommitted(committed *table.Table, oldFiles, newFiles int, bytesIn, bytesOut int64, removedDeletes int) {
	rep.Commits++
	rep.RewrittenDataFiles += oldFiles
	rep.AddedDataFiles += newFiles
	rep.RewrittenBytes += bytesIn
	rep.AddedBytes += bytesOut
	rep.RemovedDeleteFiles += removedDeletes
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
}
