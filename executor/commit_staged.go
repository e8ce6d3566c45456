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
	rep.Commits++
	rep.RewrittenDataFiles += len(oldFiles)
	rep.AddedDataFiles += len(newFiles)
	rep.RewrittenBytes += bytesIn
	rep.AddedBytes += bytesOut
	rep.RemovedDeleteFiles += st.RemovedDeleteFiles()
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
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
