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
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/planner"
)

// commitBatch commits the already written outputs of one batch, retrying
// conflicts until the job's commit budget runs out. The outputs' manifest,
// the tombstones of the inputs and copies of the manifests that held them
// are written once; an attempt after a conflict reads only the snapshots
// committed since the previous one, re-validates against them and writes a
// new manifest list (stagedRewrite). Format v1 and v3 tables go through
// commitBatchReplay.
//
// planned is the table the outputs were read from: validation starts there.
// head is the table the first attempt commits on.
//
// eqDeletes are the equality deletes that applied to the inputs when they
// were read: those the rewrite leaves applying to nothing go in the same
// commit, as do the position deletes it leaves applying to nothing.
func (e *Executor) commitBatch(ctx context.Context, log *slog.Logger, job planner.Job, planned, head *table.Table, fs iceio.IO,
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
	inputs := newRewriteInputs(planned.Metadata(), oldFiles)
	if base := planned.CurrentSnapshot().SnapshotID; head.CurrentSnapshot().SnapshotID != base {
		// Our own previous batch (partial progress) or a refresh: what was
		// committed since the outputs were read must not conflict.
		if err := checkSince(fs, head.Metadata(), base, inputs); err != nil {
			return nil, err
		}
	}
	props := iceberg.Properties{planner.SnapshotJobProperty: job.ID}
	maps.Copy(props, extraProps)
	st := &stagedRewrite{
		fs: fs, op: table.OpReplace, props: props,
		addData: newFiles, always: always, optional: optional,
		dataTracked: true, validate: inputs.conflictsWith,
	}
	committed, err := e.commitStaged(ctx, log, job, head, fs, st, rep, "rewrite")
	if err != nil {
		if conflict.IsRetryable(err) {
			return nil, fmt.Errorf("gave up after %d attempts in %s: %w", rep.Attempts, job.Settings.CommitRetryTime, err)
		}
		return nil, err
	}
	rep.Commits++
	rep.RewrittenDataFiles += len(oldFiles)
	rep.AddedDataFiles += len(newFiles)
	rep.RewrittenBytes += bytesIn
	rep.AddedBytes += bytesOut
	rep.RemovedDeleteFiles += st.removedDeleteFiles()
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	e.met.FilesRewritten.WithLabelValues(job.TableName).Add(float64(len(oldFiles)))
	e.met.FilesAdded.WithLabelValues(job.TableName).Add(float64(len(newFiles)))
	return committed, nil
}

// stagedCommits reports whether a rewrite commits through stagedRewrite:
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
// commits it on the catalog's current head, retrying lost races within the
// job's commit budget. Every
// failed attempt's manifest list is deleted at once; the manifests st
// wrote once are deleted only when the commit definitively did not land,
// and never when its outcome is unknown (errUnknownCommitState).
func (e *Executor) commitStaged(ctx context.Context, log *slog.Logger, job planner.Job, head *table.Table, fs iceio.IO,
	st *stagedRewrite, rep *Report, what string) (*table.Table, error) {
	sw, err := newSnapshotWriter(head, fs)
	if err != nil {
		return nil, err
	}
	st.sw = sw
	start := time.Now()
	if err := st.prepare(ctx, head); err != nil {
		rep.StagedMetadataCleanedUp += removePaths(fs, append(st.superseded, st.ownManifests()...), log)
		return nil, err
	}
	log.Debug("rewrite staged", "manifests_read", st.opened, "manifests_written", len(st.ownManifests()),
		"duration", time.Since(start).Round(time.Millisecond))
	var (
		committed    *table.Table
		attempt      int
		attemptStart time.Time
	)
	op := func() error {
		attempt++
		rep.Attempts++
		attemptStart = time.Now()
		opened := st.opened
		// Every attempt, the first included, starts from the catalog's
		// head: a busy writer has committed since the outputs were
		// written, and reading its commits costs less than losing.
		tbl, err := e.loadForAttempt(ctx, job)
		if err != nil {
			return err
		}
		if err := st.advance(tbl.Metadata()); err != nil {
			return backoff.Permanent(err)
		}
		manifests, err := st.manifestsFor(tbl.Metadata())
		if errors.Is(err, errRescan) {
			log.Info("manifests changed under the rewrite; reading the current snapshot again", "attempt", attempt, "why", err)
			if err := st.prepare(ctx, tbl); err != nil {
				return backoff.Permanent(err)
			}
			manifests, err = st.manifestsFor(tbl.Metadata())
		}
		if err != nil {
			return backoff.Permanent(err)
		}
		summary, err := st.summary(tbl.Metadata())
		if err != nil {
			return backoff.Permanent(err)
		}
		res, err := e.commitOn(ctx, tbl, sw, attempt-1, manifests, summary)
		log.Debug("commit attempt", "attempt", attempt, "manifests_read", st.opened-opened,
			"duration", time.Since(attemptStart).Round(time.Microsecond), "error", err)
		switch {
		case err == nil:
			committed = res.committed
			return nil
		case res.list == "":
			return backoff.Permanent(fmt.Errorf("stage %s: %w", what, err))
		case conflict.IsRetryable(err):
			// Nothing references this attempt's list (pitfall 6).
			rep.StagedMetadataCleanedUp += removePaths(fs, []string{res.list}, log)
			return e.commitFailure(job, rep, what, err)
		}
		// The catalog may or may not have taken the commit. Look before
		// deciding; never delete what may be live.
		if landed := e.findSnapshot(ctx, job, sw.snapshotID); landed != nil {
			committed = landed
			return nil
		}
		return backoff.Permanent(unknownUnlessRefused(err))
	}
	err = e.retryCommitsInto(ctx, log, job, rep, op, func() (int, time.Time) { return attempt, attemptStart })
	switch {
	case err == nil:
		rep.StagedMetadataCleanedUp += removePaths(fs, st.superseded, log)
		return committed, nil
	case errors.Is(err, errUnknownCommitState):
		return nil, err
	default:
		rep.StagedMetadataCleanedUp += removePaths(fs, append(st.superseded, st.ownManifests()...), log)
		return nil, err
	}
}

// findSnapshot loads the table and returns it when snapshot id is in its
// history: after an ambiguous commit error it tells whether that very
// commit landed (a job's earlier batches carry the same job id).
func (e *Executor) findSnapshot(ctx context.Context, job planner.Job, id int64) *table.Table {
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil || tbl.Metadata().SnapshotByID(id) == nil {
		return nil
	}
	return tbl
}

// commitDeleteMergesStaged is commitDeleteMerges through stagedRewrite:
// the sources must all still be live, and only delete manifests are read.
func (e *Executor) commitDeleteMergesStaged(ctx context.Context, log *slog.Logger, job planner.Job, planned *table.Table, fs iceio.IO,
	merges []*deleteMerge, rep *Report) (*table.Table, error) {
	st := &stagedRewrite{
		fs: fs, op: table.OpReplace,
		props:  iceberg.Properties{planner.SnapshotJobProperty: job.ID},
		always: map[string]iceberg.DataFile{},
	}
	for _, m := range merges {
		for _, src := range m.remove {
			st.always[src.file.FilePath()] = src.file
		}
		for _, out := range m.outputs {
			st.addDeletes = append(st.addDeletes, deleteAddition{file: out, seq: m.seq})
		}
	}
	return e.commitStaged(ctx, log, job, planned, fs, st, rep, "position-delete rewrite")
}
