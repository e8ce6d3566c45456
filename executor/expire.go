package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/planner"
)

// ErrReaderMarginViolated: the staged expiry would remove a branch or tag
// head. Refused outright.
var ErrReaderMarginViolated = errors.New("expiry would remove a protected snapshot")

// ExpiryCounts are what Spark's expire_snapshots returns, plus where the
// files went: reactor unlinks them at the expiry and deletes them once
// min_reader_margin has passed (Deferred), or at once with a zero margin.
type ExpiryCounts struct {
	ExpiredSnapshots           int
	DeletedDataFiles           int
	DeletedPositionDeleteFiles int
	DeletedEqualityDeleteFiles int
	DeletedManifests           int
	DeletedManifestLists       int
	DeletedStatisticsFiles     int
	// Deferred: the counted files were unlinked, not deleted; they are
	// deleted at DeletionDue by a delete_expired_files pass.
	Deferred    bool
	DeletionDue time.Time
}

// Files is the number of files counted, of every kind.
func (x ExpiryCounts) Files() int {
	return x.DeletedDataFiles + x.DeletedPositionDeleteFiles + x.DeletedEqualityDeleteFiles +
		x.DeletedManifests + x.DeletedManifestLists + x.DeletedStatisticsFiles
}

func (x *ExpiryCounts) count(kind string) {
	switch kind {
	case deletions.KindData:
		x.DeletedDataFiles++
	case deletions.KindPositionDelete:
		x.DeletedPositionDeleteFiles++
	case deletions.KindEqualityDelete:
		x.DeletedEqualityDeleteFiles++
	case deletions.KindManifest:
		x.DeletedManifests++
	case deletions.KindManifestList:
		x.DeletedManifestLists++
	case deletions.KindStatistics:
		x.DeletedStatisticsFiles++
	}
}

// expireSnapshots runs iceberg-go's ExpireSnapshots with the job's
// retention (never removing a ref head) and deletes nothing itself: the
// files no remaining snapshot references are written to the table's
// pending-deletion list, due min_reader_margin after the commit, which is
// when no reader that could still see them is left (seed 000's incident).
// An attempt reads only the table's metadata, so it costs about what a
// writer's commit costs and retries cheaply against a busy writer; the
// history walk that finds the unlinked files runs once, after the commit.
func (e *Executor) expireSnapshots(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var (
		rep       Report
		pre, post *table.Table
		removed   []*table.Snapshot
	)
	olderThan := max(job.ExpireOlderThan, 0)
	retainLast := max(job.ExpireRetainLast, job.Settings.RetainLast, 1)
	delay := max(job.Settings.MinReaderMargin, job.Settings.ExpireDeletionDelay)
	var (
		attemptStart time.Time
		intent       deletions.Ref
	)
	op := func() error {
		rep.Attempts++
		attemptStart = time.Now()
		tbl, err := e.loadForAttempt(ctx, job)
		if err != nil {
			return err
		}
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithOlderThan(olderThan), table.WithRetainLast(retainLast),
			table.WithPostCommit(false)); err != nil {
			return backoff.Permanent(fmt.Errorf("stage expiry: %w", err))
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return backoff.Permanent(fmt.Errorf("stage expiry: %w", err))
		}
		removed, err = removedSnapshots(tbl.Metadata(), staged.Metadata())
		if err != nil {
			return backoff.Permanent(err)
		}
		if len(removed) == 0 || job.DryRun {
			pre, post = tbl, staged.Table
			return nil
		}
		if intent.Location == "" && delay > 0 {
			// Between the commit and the pending list a crash would leave
			// the unlinked files to nobody: say first what is about to go.
			if intent, err = writeIntent(ctx, tbl, job); err != nil {
				return backoff.Permanent(err)
			}
		}
		next, err := txn.Commit(ctx)
		if err != nil {
			return e.commitFailure(job, &rep, "expiry", err)
		}
		pre, post = tbl, next
		return nil
	}
	err := e.retryCommits(ctx, log, job, op, func() (int, time.Time) { return rep.Attempts, attemptStart })
	if err != nil || post == nil || len(removed) == 0 {
		if intent.Location != "" {
			// Nothing committed: the intent has nothing to recover. If the
			// commit's outcome is unknown, the pass's recovery decides.
			if rerr := e.dropIntent(ctx, job, intent, errors.Is(err, errUnknownCommitState)); rerr != nil {
				log.Warn("could not remove the expiry's intent; the next deletion pass will", "error", rerr)
			}
		}
	}
	if err != nil {
		return retryOutcome(err, rep.Attempts), rep
	}
	if len(removed) == 0 {
		log.Info("no snapshot to expire", "older_than", olderThan, "retain_last", retainLast)
		return planner.Result{Outcome: planner.Noop}, rep
	}
	leftAt := time.Now()
	fs, err := pre.FS(ctx)
	var files []deletions.File
	if err == nil {
		files, err = e.expiryUnlinked(ctx, fs, pre, post, job.DryRun)
	}
	rep.Expiry.ExpiredSnapshots = len(removed)
	for _, f := range files {
		rep.Expiry.count(f.Kind)
	}
	if job.DryRun {
		rep.DryRun = true
		if err != nil {
			return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("read history: %w", err)}, rep
		}
		log.Info("dry run: snapshots that would expire", "snapshots", len(removed), "files", len(files),
			"older_than", olderThan, "retain_last", retainLast)
		return planner.Result{Outcome: planner.Succeeded}, rep
	}
	rep.Commits = 1
	rep.CommittedSnapshotID = post.CurrentSnapshot().SnapshotID
	res := planner.Result{Outcome: planner.Succeeded, Table: post}
	if err != nil {
		// The expiry stands; its intent stays and the next deletion pass
		// lists the unlinked files from the metadata it started on.
		log.Warn("expiry committed, but the files it unlinked could not be listed yet; the deletion pass will retry",
			"expired_snapshots", len(removed), "error", err)
		if intent.Location != "" {
			res.PendingDeletes = []deletions.Ref{intent}
		}
		return res, rep
	}
	if len(files) == 0 {
		e.removeIntent(fs, intent, log)
		return res, rep
	}
	if delay <= 0 {
		// min_reader_margin 0: the operator says no reader outlives a
		// commit. Deleted now, through the same checks as a later pass.
		var x ExpiryCounts
		if _, err := e.deleteUnlinked(ctx, log, post, fs, files, &x, &rep.Orphans); err != nil {
			log.Warn("expiry committed; deleting the unlinked files failed; orphan cleanup will find the rest", "error", err)
		}
		x.ExpiredSnapshots = len(removed)
		rep.Expiry = x
		return res, rep
	}
	batch := deletions.Batch{Table: job.TableName, JobID: job.ID, LeftAt: leftAt, Due: leftAt.Add(delay), Files: files}
	ref, err := deletions.Write(fs, post.Location(), batch)
	if err != nil {
		log.Error("expiry committed, but its pending-deletion list could not be written; the deletion pass will rebuild it",
			"files", len(files), "error", err)
		res.PendingDeletes = []deletions.Ref{intent}
		return res, rep
	}
	e.removeIntent(fs, intent, log)
	rep.Expiry.Deferred, rep.Expiry.DeletionDue = true, ref.Due
	log.Info("files unlinked by the expiry wait for min_reader_margin before deletion", "files", len(files),
		"min_reader_margin", delay, "due", ref.Due, "list", ref.Location)
	res.PendingDeletes = []deletions.Ref{ref}
	return res, rep
}

// deleteExpiredFiles is the later pass of an expiry: for each due batch,
// every file is checked against the table's whole history again (a
// rollback, a branch or a re-added file may reference it now) and deleted
// only if nothing does; then the batch is removed. It is the one path that
// deletes what expiry unlinked (iceberg-go's post-commit deletion is never
// used, and orphan cleanup leaves pending files alone).
func (e *Executor) deleteExpiredFiles(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var rep Report
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("load table: %w", err), PendingDeletes: job.PendingDeletes}, rep
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("open table io: %w", err), PendingDeletes: job.PendingDeletes}, rep
	}
	now := time.Now()
	var left []deletions.Ref
	var gone int
	for i, ref := range job.PendingDeletes {
		if ref.Intent {
			rebuilt, err := e.recoverIntent(ctx, log, job, tbl, fs, ref)
			if err != nil {
				return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: append(left, job.PendingDeletes[i:]...)}, rep
			}
			left = append(left, rebuilt...)
			continue
		}
		b, err := deletions.Read(fs, ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue // another pass finished it
		}
		if err != nil {
			return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: job.PendingDeletes[i:]}, rep
		}
		if b.Due.After(now) {
			// Never early, whatever the batch's name said.
			left = append(left, ref)
			continue
		}
		n, err := e.deleteUnlinked(ctx, log, tbl, fs, b.Files, &rep.Expiry, &rep.Orphans)
		gone += n
		if err != nil {
			return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: append(left, job.PendingDeletes[i:]...)}, rep
		}
		if err := deletions.Remove(fs, ref); err != nil {
			return planner.Result{Outcome: planner.Failed, Err: err, PendingDeletes: append(left, job.PendingDeletes[i:]...)}, rep
		}
	}
	if gone > 0 {
		// Only this pass deletes unlinked files: something outside
		// reactor removed these.
		log.Warn("files due for deletion were already gone", "files", gone)
	}
	log.Info("unlinked files deleted", "batches", len(job.PendingDeletes), "left", len(left), "deleted", rep.Expiry.Files(),
		"still_referenced", rep.Orphans.StillReferenced)
	return planner.Result{Outcome: planner.Succeeded, PendingDeletes: left}, rep
}

// deleteUnlinked deletes files no snapshot, metadata file or statistics
// file of tbl's history references, counting them by kind in x and the
// referenced ones in or. It returns how many were already gone.
func (e *Executor) deleteUnlinked(ctx context.Context, log *slog.Logger, tbl *table.Table, fs iceio.IO, files []deletions.File,
	x *ExpiryCounts, or *OrphanReport) (int, error) {
	referenced, done, err := e.referencedBy(ctx, tbl, fs)
	if err != nil {
		return 0, fmt.Errorf("read table history: %w", err)
	}
	defer done()
	gone := 0
	for _, f := range files {
		if referenced(location.Identity(f.Path)) {
			or.StillReferenced++
			log.Info("an unlinked file is referenced again; kept", "path", f.Path)
			continue
		}
		if err := fs.Remove(f.Path); err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				gone++
				continue
			}
			return gone, fmt.Errorf("delete %s: %w", f.Path, err)
		}
		x.count(f.Kind)
		or.DeletedFiles++
	}
	return gone, nil
}

// removedSnapshots lists the snapshots the staged metadata drops, and
// refuses if one is still a branch or tag head.
func removedSnapshots(before, after table.Metadata) ([]*table.Snapshot, error) {
	kept := map[int64]bool{}
	for _, s := range after.Snapshots() {
		kept[s.SnapshotID] = true
	}
	heads := map[int64]string{}
	for name, ref := range before.Refs() {
		heads[ref.SnapshotID] = name
	}
	var removed []*table.Snapshot
	for _, s := range before.Snapshots() {
		if kept[s.SnapshotID] {
			continue
		}
		if name, ok := heads[s.SnapshotID]; ok {
			return nil, fmt.Errorf("%w: snapshot %d is the head of %q", ErrReaderMarginViolated, s.SnapshotID, name)
		}
		removed = append(removed, &s)
	}
	return removed, nil
}

// unlinkedFiles lists the files an expiry from pre to post unlinks: the
// manifest lists of the removed snapshots, their manifests no remaining
// snapshot lists, the live files of those manifests that no remaining
// manifest holds live, and the statistics files of removed snapshots.
// Each manifest is read once. A remaining manifest whose smallest data
// sequence number is above every candidate's cannot hold a candidate (it
// was written after them and holds only newer files) and is not read, so
// the walk costs what the expired part of the history holds, not the whole
// table; a file re-added since is caught by the deletion pass, which
// checks the whole history again before deleting anything.
func unlinkedFiles(ctx context.Context, fs iceio.IO, pre, post table.Metadata) ([]deletions.File, error) {
	retainedIDs := map[int64]bool{}
	retained := map[string]iceberg.ManifestFile{}
	for _, snap := range post.Snapshots() {
		retainedIDs[snap.SnapshotID] = true
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			retained[m.FilePath()] = m
		}
	}
	var out []deletions.File
	seen := map[string]bool{}
	add := func(path, kind string) {
		if path != "" && !seen[path] {
			seen[path] = true
			out = append(out, deletions.File{Path: path, Kind: kind})
		}
	}
	candidates := map[string]string{} // live file -> kind
	maxSeq := int64(-1)
	for _, snap := range pre.Snapshots() {
		if retainedIDs[snap.SnapshotID] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		add(snap.ManifestList, deletions.KindManifestList)
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if _, ok := retained[m.FilePath()]; ok || seen[m.FilePath()] {
				continue
			}
			add(m.FilePath(), deletions.KindManifest)
			for entry, err := range m.Entries(fs, true) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				df := entry.DataFile()
				candidates[df.FilePath()] = fileKind(df)
				if seq := entry.SequenceNum(); seq >= 0 {
					maxSeq = max(maxSeq, seq)
				} else {
					maxSeq = math.MaxInt64 // unknown: prune nothing
				}
			}
		}
	}
	if len(candidates) > 0 {
		for _, m := range retained {
			if m.MinSequenceNum() > maxSeq {
				continue
			}
			for entry, err := range m.Entries(fs, true) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				delete(candidates, entry.DataFile().FilePath())
			}
		}
	}
	paths := make([]string, 0, len(candidates))
	for p := range candidates {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		add(p, candidates[p])
	}
	for _, f := range unlinkedStatistics(pre, post) {
		add(f.Path, f.Kind)
	}
	return out, nil
}

func fileKind(df iceberg.DataFile) string {
	switch df.ContentType() {
	case iceberg.EntryContentPosDeletes:
		return deletions.KindPositionDelete
	case iceberg.EntryContentEqDeletes:
		return deletions.KindEqualityDelete
	}
	return deletions.KindData
}

// reachableFiles are the files a table's snapshots reference, by kind.
type reachableFiles struct {
	manifestLists, manifests, data, posDeletes, eqDeletes, stats map[string]bool
}

func reachable(ctx context.Context, fs iceio.IO, meta table.Metadata) (reachableFiles, error) {
	r := reachableFiles{manifestLists: map[string]bool{}, manifests: map[string]bool{}, data: map[string]bool{},
		posDeletes: map[string]bool{}, eqDeletes: map[string]bool{}, stats: map[string]bool{}}
	for sf := range meta.Statistics() {
		r.stats[sf.StatisticsPath] = true
	}
	for _, snap := range meta.Snapshots() {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		r.manifestLists[snap.ManifestList] = true
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return r, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if r.manifests[m.FilePath()] {
				continue
			}
			r.manifests[m.FilePath()] = true
			for entry, err := range m.Entries(fs, false) {
				if err != nil {
					return r, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				if entry.Status() == iceberg.EntryStatusDELETED {
					continue
				}
				df := entry.DataFile()
				switch df.ContentType() {
				case iceberg.EntryContentPosDeletes:
					r.posDeletes[df.FilePath()] = true
				case iceberg.EntryContentEqDeletes:
					r.eqDeletes[df.FilePath()] = true
				default:
					r.data[df.FilePath()] = true
				}
			}
		}
	}
	return r, nil
}

// unreachableIn lists the files r references that o does not.
func (r reachableFiles) unreachableIn(o reachableFiles) []string {
	var out []string
	for _, pair := range [][2]map[string]bool{{r.manifestLists, o.manifestLists}, {r.manifests, o.manifests},
		{r.data, o.data}, {r.posDeletes, o.posDeletes}, {r.eqDeletes, o.eqDeletes}, {r.stats, o.stats}} {
		for loc := range pair[0] {
			if !pair[1][loc] {
				out = append(out, loc)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (r reachableFiles) minus(o reachableFiles) ExpiryCounts {
	diff := func(a, b map[string]bool) int {
		n := 0
		for k := range a {
			if !b[k] {
				n++
			}
		}
		return n
	}
	return ExpiryCounts{
		DeletedDataFiles:           diff(r.data, o.data),
		DeletedPositionDeleteFiles: diff(r.posDeletes, o.posDeletes),
		DeletedEqualityDeleteFiles: diff(r.eqDeletes, o.eqDeletes),
		DeletedManifests:           diff(r.manifests, o.manifests),
		DeletedManifestLists:       diff(r.manifestLists, o.manifestLists),
		DeletedStatisticsFiles:     diff(r.stats, o.stats),
	}
}

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
