package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/scope"
)

// Output intents: a rewriting job (compaction, sort, position-delete
// rewrite) records, in the table's storage and before its first output, a
// job-wide output token that every file name reactor's writers give the
// job carries, and the table's data directories. A killed job's outputs
// are then found by listing those directories for the token, once, by the
// next owner; the hot loop writes files exactly as before. (The other
// choice, writing each planned path before its file is created, costs a
// round trip per output file on every job to save a listing only after a
// crash.) iceberg-go's fallback writer names its files itself, so there,
// and only there, each path is added to the intent before the file is
// created (recordingTable).
//
// Why the next owner may delete what it finds: only a process holding the
// table's lease (a commit guard) looks, and only at intents written under
// a lease; a one-shot command holds none and may run beside a replica. A
// job of this process that is still running is in e.live and never
// touched. Any other leased intent is a job that ended without removing it: killed, cut off, or with an unknown
// commit outcome. A cut-off owner cannot commit once its lease could have
// expired (docs/design.md#rule-one-owner: the lease is checked inside the
// catalog's commit call, whose context ends when the lease could), and a
// new owner holds the lease only after that, so whatever the old owner
// committed is in the history the new owner loads, and whatever it did not
// commit never will be. Every candidate is still checked against the whole
// history and the pending deletions (deleteUnlinked, as expiry's deletion
// pass does), with the lease checked per file: a committed output is never
// deleted. See docs/design.md#rule-killed-job-outputs.

// liveJobs are the jobs of this process that have an output intent.
type liveJobs struct {
	mu  sync.Mutex
	ids map[string]int
}

func (l *liveJobs) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids == nil {
		l.ids = map[string]int{}
	}
	l.ids[id]++
}

func (l *liveJobs) done(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids[id]--; l.ids[id] <= 0 {
		delete(l.ids, id)
	}
}

func (l *liveJobs) running(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[id] > 0
}

// jobOutputs is a running job's output intent.
type jobOutputs struct {
	e    *Executor
	recs deletions.Records
	mu   sync.Mutex // guards in (Planned grows from several writers)
	in   deletions.OutputIntent
	ref  deletions.Ref
}

type jobOutputsKey struct{}

// beginOutputs records job's output intent and returns the context its
// writers run under (the token for reactor's writers, the intent for
// iceberg-go's). token is the job's output token (a uuid).
//
// An S3 Tables table gets no intent (nil jobOutputs): its bucket can
// neither list intents nor delete them, and AWS's unreferenced file
// removal deletes a killed job's outputs.
func (e *Executor) beginOutputs(ctx context.Context, tbl *table.Table, fs iceio.IO, job jobs.Job, token string) (context.Context, *jobOutputs, error) {
	if scope.S3Tables(tbl.Metadata()) != "" {
		return datapath.WithOutputToken(ctx, token), nil, nil
	}
	e.live.add(job.ID)
	o := &jobOutputs{e: e, recs: e.records(fs, tbl), in: deletions.OutputIntent{Table: job.Table.String(), JobID: job.ID,
		Kind: job.Kind.String(), Token: token, BaseMetadata: tbl.MetadataLocation(), Dirs: dataRoots(tbl), Leased: e.guard != nil,
		Written: time.Now().UTC()}}
	ref, err := o.recs.WriteOutputIntent(o.in)
	if err != nil {
		e.live.done(job.ID)
		return ctx, nil, fmt.Errorf("record the job's output intent: %w", err)
	}
	o.ref = ref
	ctx = datapath.WithOutputToken(ctx, token)
	return context.WithValue(ctx, jobOutputsKey{}, o), o, nil
}

// finish ends the job's intent: removed when the outcome is known and
// nothing of it is left unreferenced (committed, or its outputs deleted),
// kept for the next owner otherwise.
func (o *jobOutputs) finish(log *slog.Logger, keep bool) {
	if o == nil {
		return
	}
	defer o.e.live.done(o.in.JobID)
	if keep {
		log.Info("output intent left for the table's next look", "intent", o.ref.Location)
		return
	}
	if err := o.recs.Remove(o.ref); err != nil {
		log.Warn("could not remove the job's output intent; the next look at the table will", "error", err)
	}
}

// plan adds p to the intent before its file is created.
func (o *jobOutputs) plan(p string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.in.Planned = append(o.in.Planned, p)
	if _, err := o.recs.WriteOutputIntent(o.in); err != nil {
		return fmt.Errorf("record planned output %s: %w", p, err)
	}
	return nil
}

// recordingTable is tbl whose IO adds every file it creates to the job's
// intent first: for iceberg-go's writers, which name their files
// themselves. Without an intent in ctx it is tbl.
func recordingTable(ctx context.Context, tbl *table.Table) *table.Table {
	o, _ := ctx.Value(jobOutputsKey{}).(*jobOutputs)
	if o == nil {
		return tbl
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (iceio.IO, error) {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		w, ok := fs.(iceio.WriteFileIO)
		if !ok {
			return fs, nil
		}
		return recordingIO{WriteFileIO: w, o: o}, nil
	}, nil)
}

type recordingIO struct {
	iceio.WriteFileIO
	o *jobOutputs
}

func (r recordingIO) Create(name string) (iceio.FileWriter, error) {
	if err := r.o.plan(name); err != nil {
		return nil, err
	}
	return r.WriteFileIO.Create(name)
}

func (r recordingIO) WriteFile(name string, p []byte) error {
	if err := r.o.plan(name); err != nil {
		return err
	}
	return r.WriteFileIO.WriteFile(name, p)
}

// dataRoots are the directories a rewrite's outputs go to: the table's
// data directory (reactor's writers place a partition's files under
// <location>/data/<partition>) and write.data.path when set (an
// unpartitioned table's files go there). Object-store layouts hash below
// them.
func dataRoots(tbl *table.Table) []string {
	roots := []string{strings.TrimRight(tbl.Location(), "/") + "/data"}
	if p := strings.TrimRight(tbl.Properties().Get(table.WriteDataPathKey, ""), "/"); p != "" && p != roots[0] {
		roots = append(roots, p)
	}
	return roots
}

// OutputRecovery is what a look at a table's output intents did.
type OutputRecovery struct {
	// Intents were looked at; Rejected of them named nothing deletable
	// (a directory outside the table's roots) or were refused as records
	// (Refusals.Records says why).
	Intents, Rejected int
	// Deleted are outputs of ended jobs the table does not reference;
	// Kept those it does (committed, or waiting in a pending deletion).
	Deleted, Kept int
	// Refusals are the outputs and records the deletion rule refused.
	Refusals Refusals
}

// RecoverOutputs deletes the outputs of the table's ended jobs that the
// table does not reference, and their intents (see the comment above
// liveJobs). It is the first step of every rewrite and expired-file
// deletion pass of an executor with a commit guard (a replica holding the
// lease), so a killed job's outputs go within the lease TTL and the new
// owner's first such job. The caller of RecoverOutputs itself vouches that
// no other process runs jobs on the table.
func (e *Executor) RecoverOutputs(ctx context.Context, ident table.Identifier) (OutputRecovery, error) {
	tbl, err := e.cat.LoadTable(ctx, ident)
	if err != nil {
		return OutputRecovery{}, fmt.Errorf("load table: %w", err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return OutputRecovery{}, fmt.Errorf("open table io: %w", err)
	}
	return e.recoverOutputs(ctx, e.log.With("table", tableName(tbl)), tbl, fs)
}

func (e *Executor) recoverOutputs(ctx context.Context, log *slog.Logger, tbl *table.Table, fs iceio.IO) (OutputRecovery, error) {
	var rec OutputRecovery
	recs := e.records(fs, tbl)
	refs, err := recs.ListOutputIntents()
	if err != nil || len(refs) == 0 {
		return rec, err
	}
	name := tableName(tbl)
	rc, err := e.newReclaim(ctx, log, tbl, &rec.Refusals)
	if err != nil {
		return rec, err
	}
	if r := rc.refusedWhole(); r != nil && r.Rule == scope.PartialMetadata {
		return rec, fmt.Errorf("outputs of ended jobs not looked at: %w", r)
	}
	for _, ref := range refs {
		in, err := recs.ReadOutputIntent(ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if errors.Is(err, deletions.ErrRefused) {
			rec.Intents++
			rec.Rejected++
			e.refuseRecord(log, name, err, &rec.Refusals)
			continue
		}
		if err != nil {
			return rec, err
		}
		rec.Intents++
		if e.live.running(in.JobID) {
			continue // this process's own running job
		}
		if !in.Leased {
			// A one-shot command's: it held no lease, so nothing says it
			// has ended; its files are left to orphan cleanup's margin.
			log.Debug("output intent of a job without a lease left alone", "intent", ref.Location, "job_id", in.JobID)
			continue
		}
		// Only the data directories the job itself recorded, and only
		// where they are still the table's.
		jobRC := rc.within(in.Dirs)
		files, reason := e.intentOutputs(log, fs, in, jobRC)
		if reason != "" {
			rec.Rejected++
			log.Error("output intent rejected; nothing deleted for it, its job's files are left to orphan cleanup",
				"intent", ref.Location, "job_id", in.JobID, "why", reason)
			if err := recs.Remove(ref); err != nil {
				return rec, err
			}
			continue
		}
		pending, err := e.pendingLocations(fs, tbl)
		if err != nil {
			return rec, fmt.Errorf("read pending deletions: %w", err)
		}
		var cands []deletions.File
		for _, f := range files {
			if pending[location.Identity(f.Path)] {
				rec.Kept++ // expiry's deletion pass owns it, with its reader margin
				continue
			}
			cands = append(cands, f)
		}
		var x ExpiryCounts
		var or OrphanReport
		refusedBefore := rec.Refusals.Total()
		if len(cands) > 0 {
			if _, err := e.deleteUnlinked(ctx, log, tbl, fs, cands, jobRC, &x, &or); err != nil {
				return rec, fmt.Errorf("delete the outputs of interrupted job %s: %w", in.JobID, err)
			}
		}
		rec.Deleted += or.DeletedFiles
		rec.Kept += or.StillReferenced
		log.Info("outputs of an ended job looked at", "intent", ref.Location, "job_id", in.JobID, "job_kind", in.Kind,
			"found", len(files), "deleted", or.DeletedFiles, "kept_referenced", or.StillReferenced,
			"refused", rec.Refusals.Total()-refusedBefore)
		if err := recs.Remove(ref); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// intentOutputs lists the files in's job may have written: those under
// its directories whose name carries its token, and its planned paths.
// Directories outside the table's qualifying roots are not listed (the
// rule would refuse every file there); an intent whose token is not a
// uuid is rejected whole (the reason says why).
func (e *Executor) intentOutputs(log *slog.Logger, fs iceio.IO, in deletions.OutputIntent, rc *reclaim) ([]deletions.File, string) {
	if in.Token != "" {
		if _, err := uuid.Parse(in.Token); err != nil {
			return nil, fmt.Sprintf("output token %q is not a uuid", in.Token)
		}
	}
	seen := map[string]bool{}
	var out []deletions.File
	add := func(p string) {
		if id := location.Identity(p); !seen[id] {
			seen[id] = true
			out = append(out, deletions.File{Path: p, Kind: kindOf(p)})
		}
	}
	for _, p := range in.Planned {
		add(p)
	}
	if in.Token == "" {
		return out, ""
	}
	lister, ok := fs.(iceio.ListableIO)
	if !ok {
		return nil, "the table's storage cannot list"
	}
	for _, d := range in.Dirs {
		dir := strings.TrimRight(d, "/")
		if _, ok := rc.allow(dir + "/" + in.Token); !ok {
			continue // refused and counted once for the directory
		}
		root := ""
		err := lister.WalkDir(dir, func(p string, de iofs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, iofs.ErrNotExist) {
					return iofs.SkipAll
				}
				return err
			}
			if root == "" {
				root = strings.TrimRight(p, "/") // the walk's own spelling of dir
				return nil
			}
			if de.IsDir() || !strings.Contains(path.Base(p), in.Token) {
				return nil
			}
			// The full location is dir's spelling plus the walk's
			// relative part: the spelling the table's metadata uses.
			add(dir + "/" + strings.TrimLeft(strings.TrimPrefix(p, root), "/"))
			return nil
		})
		if err != nil {
			log.Warn("could not list a directory of an ended job's outputs", "dir", dir, "error", err)
			return nil, fmt.Sprintf("listing %s failed: %v", dir, err)
		}
	}
	return out, ""
}

// kindOf is what an output is, by its name: reactor's merged position
// deletes carry mergedDeleteSuffix.
func kindOf(p string) history.Kind {
	if strings.HasSuffix(p, mergedDeleteSuffix) {
		return history.PositionDelete
	}
	return history.Data
}

// errCrashed: a test's crash point stopped the job (Executor.crash).
var errCrashed = errors.New("stopped at a crash point, as a killed process would")

func (e *Executor) crashed(point string) bool { return e.crash != nil && e.crash(point) }

// covers reports whether every planned output of the intent is in paths
// (the ones a failed batch deleted), so that the intent may go.
func (o *jobOutputs) covers(paths []string) bool {
	if o == nil {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.in.Planned) == 0 {
		return true
	}
	gone := make(map[string]bool, len(paths))
	for _, p := range paths {
		gone[location.Identity(p)] = true
	}
	for _, p := range o.in.Planned {
		if !gone[location.Identity(p)] {
			return false
		}
	}
	return true
}

// recoverOutputsBefore is recoverOutputs as a job's first step: what it
// cannot finish the next job's look will, so it never fails the job.
func (e *Executor) recoverOutputsBefore(ctx context.Context, log *slog.Logger, tbl *table.Table, fs iceio.IO) {
	if e.guard == nil {
		// No lease (a one-shot command): this process may not be the
		// table's only one, and another's running job must keep its
		// outputs.
		return
	}
	if scope.S3Tables(tbl.Metadata()) != "" {
		return // no intents there (beginOutputs)
	}
	if _, err := e.recoverOutputs(ctx, log, tbl, fs); err != nil {
		log.Warn("could not clean up the outputs ended jobs left; the next job will try again", "error", err)
	}
}
