package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobs"
)

// maxBaseMetadataBytes bounds the metadata file an expiry intent names:
// it is read whole to rebuild the pending list. Real metadata files of
// tables with thousands of snapshots are tens of MiB.
const maxBaseMetadataBytes = 512 << 20

// DuePendingDeletes lists the table's pending-deletion batches due by now
// (by their names: each is verified when the pass reads it).
func (e *Executor) DuePendingDeletes(ctx context.Context, ident table.Identifier, now time.Time) ([]deletions.Ref, error) {
	tbl, err := e.cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table: %w", err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open table io: %w", err)
	}
	refs, err := e.records(fs, tbl).List()
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(refs) && !refs[n].Due.After(now) {
		n++
	}
	return refs[:n], nil
}

// pendingLocations lists every file any of the table's pending-deletion
// batches names, canonical: they are unreferenced but not orphans — the
// deletion pass owns them and deletes them once the reader margin has
// passed, which may be after the orphan margin measured from the file's
// creation. Batches that do not verify count too: shielding a file only
// ever keeps it.
func (e *Executor) pendingLocations(fs iceio.IO, tbl *table.Table) (map[string]bool, error) {
	return e.records(fs, tbl).Shielded()
}

// writeIntent records, before an expiry's commit, that it is about to
// unlink files, with the roots they lie under.
func (e *Executor) writeIntent(ctx context.Context, log *slog.Logger, tbl *table.Table, job jobs.Job) (deletions.Ref, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("open table io: %w", err)
	}
	var discard Refusals
	rc, err := e.newReclaim(ctx, log, tbl, &discard)
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("record the expiry's intent: %w", err)
	}
	ref, err := e.records(fs, tbl).WriteIntent(deletions.Intent{Table: job.Table.String(), JobID: job.ID,
		BaseMetadata: tbl.MetadataLocation(), Written: time.Now(), Roots: rc.check.Roots()})
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("record the expiry's intent: %w", err)
	}
	return ref, nil
}

func (e *Executor) removeIntent(fs iceio.IO, tbl *table.Table, ref deletions.Ref, log *slog.Logger) {
	if ref.Location == "" {
		return
	}
	if err := e.records(fs, tbl).Remove(ref); err != nil {
		log.Warn("could not remove the expiry's intent; the next deletion pass will", "error", err)
	}
}

// dropIntent removes the intent of an expiry that did not commit; with an
// unknown outcome it is left for the deletion pass, which can tell.
func (e *Executor) dropIntent(ctx context.Context, job jobs.Job, ref deletions.Ref, unknown bool) error {
	if unknown {
		return nil
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	return e.records(fs, tbl).Remove(ref)
}

// recoverIntent rebuilds the pending list of an expiry that committed but
// died before writing it: the files the snapshots of its base metadata
// referenced that the table's history no longer does. An expiry that never
// committed unlinked nothing and leaves an empty result. The rebuilt batch
// is due a whole margin from now: the commit's time is not known, only
// that it was before now. An intent that is not reactor's own for this
// table, or whose base metadata is another table's or too large, is
// refused: left where it is and not acted on.
func (e *Executor) recoverIntent(ctx context.Context, log *slog.Logger, job jobs.Job, tbl *table.Table, fs iceio.IO,
	refusals *Refusals, ref deletions.Ref) ([]deletions.Ref, error) {
	recs := e.records(fs, tbl)
	in, err := recs.ReadIntent(ref)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, deletions.ErrRefused) {
		e.refuseRecord(log, job.Table.String(), err, refusals)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := deletions.ReadBounded(fs, in.BaseMetadata, maxBaseMetadataBytes)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		log.Warn("the metadata an interrupted expiry started from is gone; its files are left to orphan cleanup",
			"metadata", in.BaseMetadata)
		return nil, recs.Remove(ref)
	case errors.Is(err, deletions.ErrRefused):
		e.refuseRecord(log, job.Table.String(), &deletions.Refusal{Location: ref.Location, Reason: deletions.RefusedTooLarge,
			Detail: fmt.Sprintf("its base metadata %s: %v", in.BaseMetadata, err)}, refusals)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the expiry's base metadata %s: %w", in.BaseMetadata, err)
	}
	base, err := table.ParseMetadataBytes(data)
	if err != nil {
		return nil, fmt.Errorf("parse the expiry's base metadata %s: %w", in.BaseMetadata, err)
	}
	if own, other := tbl.Metadata().TableUUID(), base.TableUUID(); own != uuid.Nil && other != own {
		e.refuseRecord(log, job.Table.String(), &deletions.Refusal{Location: ref.Location, Reason: deletions.RefusedOtherTable,
			Detail: fmt.Sprintf("its base metadata %s is table %s's, not %s", in.BaseMetadata, other, own)}, refusals)
		return nil, nil
	}
	files, err := unlinkedFiles(ctx, fs, base, tbl.Metadata())
	if err != nil {
		return nil, fmt.Errorf("list what the interrupted expiry unlinked: %w", err)
	}
	var out []deletions.Ref
	if len(files) > 0 {
		now := time.Now()
		delay := max(job.Settings.MinReaderMargin, job.Settings.ExpireDeletionDelay)
		refs, err := recs.WriteBatch(deletions.Batch{Table: in.Table, JobID: in.JobID, LeftAt: now,
			Due: now.Add(delay), Files: files, Roots: in.Roots})
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
		log.Info("rebuilt the pending list of an interrupted expiry", "job_id", in.JobID, "files", len(files), "due", refs[0].Due)
	}
	return out, recs.Remove(ref)
}
