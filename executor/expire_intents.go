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

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/planner"
)

// DuePendingDeletes lists the table's pending-deletion batches due by now.
func (e *Executor) DuePendingDeletes(ctx context.Context, ident table.Identifier, now time.Time) ([]deletions.Ref, error) {
	tbl, err := e.cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table: %w", err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open table io: %w", err)
	}
	refs, err := deletions.List(fs, tbl.Location())
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(refs) && !refs[n].Due.After(now) {
		n++
	}
	return refs[:n], nil
}

// pendingLocations lists every file of the table's pending-deletion
// batches, canonical: they are unreferenced but not orphans — the deletion
// pass owns them and deletes them once the reader margin has passed, which
// may be after the orphan margin measured from the file's creation.
func pendingLocations(fs iceio.IO, tbl *table.Table) (map[string]bool, error) {
	refs, err := deletions.List(fs, tbl.Location())
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ref := range refs {
		b, err := deletions.Read(fs, ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, f := range b.Files {
			out[location.Identity(f.Path)] = true
		}
	}
	return out, nil
}

func writeIntent(ctx context.Context, tbl *table.Table, job planner.Job) (deletions.Ref, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("open table io: %w", err)
	}
	ref, err := deletions.WriteIntent(fs, tbl.Location(), deletions.Intent{Table: job.TableName, JobID: job.ID,
		BaseMetadata: tbl.MetadataLocation(), Written: time.Now()})
	if err != nil {
		return deletions.Ref{}, fmt.Errorf("record the expiry's intent: %w", err)
	}
	return ref, nil
}

func (e *Executor) removeIntent(fs iceio.IO, ref deletions.Ref, log *slog.Logger) {
	if ref.Location == "" {
		return
	}
	if err := deletions.Remove(fs, ref); err != nil {
		log.Warn("could not remove the expiry's intent; the next deletion pass will", "error", err)
	}
}

// dropIntent removes the intent of an expiry that did not commit; with an
// unknown outcome it is left for the deletion pass, which can tell.
func (e *Executor) dropIntent(ctx context.Context, job planner.Job, ref deletions.Ref, unknown bool) error {
	if unknown {
		return nil
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	return deletions.Remove(fs, ref)
}

// recoverIntent rebuilds the pending list of an expiry that committed but
// died before writing it: the files the snapshots of its base metadata
// referenced that the table's history no longer does. An expiry that never
// committed unlinked nothing and leaves an empty result. The rebuilt batch
// is due a whole margin from now: the commit's time is not known, only
// that it was before now.
func (e *Executor) recoverIntent(ctx context.Context, log *slog.Logger, job planner.Job, tbl *table.Table, fs iceio.IO,
	ref deletions.Ref) ([]deletions.Ref, error) {
	in, err := deletions.ReadIntent(fs, ref)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := deletions.ReadFile(fs, in.BaseMetadata)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("read the expiry's base metadata %s: %w", in.BaseMetadata, err)
		}
		log.Warn("the metadata an interrupted expiry started from is gone; its files are left to orphan cleanup",
			"metadata", in.BaseMetadata)
		return nil, deletions.Remove(fs, ref)
	}
	base, err := table.ParseMetadataBytes(data)
	if err != nil {
		return nil, fmt.Errorf("parse the expiry's base metadata %s: %w", in.BaseMetadata, err)
	}
	files, err := unlinkedFiles(ctx, fs, base, tbl.Metadata())
	if err != nil {
		return nil, fmt.Errorf("list what the interrupted expiry unlinked: %w", err)
	}
	var out []deletions.Ref
	if len(files) > 0 {
		now := time.Now()
		delay := max(job.Settings.MinReaderMargin, job.Settings.ExpireDeletionDelay)
		batch, err := deletions.Write(fs, tbl.Location(), deletions.Batch{Table: in.Table, JobID: in.JobID, LeftAt: now,
			Due: now.Add(delay), Files: files})
		if err != nil {
			return nil, err
		}
		out = append(out, batch)
		log.Info("rebuilt the pending list of an interrupted expiry", "job_id", in.JobID, "files", len(files), "due", batch.Due)
	}
	return out, deletions.Remove(fs, ref)
}
