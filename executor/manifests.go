package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/jobs"
)

// rewriteManifests merges the table's data manifests into target-sized ones
// clustered by partition, so every later scan, rewrite and commit reads a
// handful of manifests instead of one per streaming append
// (docs/design.md#pitfall-manifests-dominate). It writes no data. The
// merged manifests are written once (by iceberg-go's RewriteManifests);
// after a lost race, while every manifest
// they replace is still in the table, a retry reads only the new head's
// manifest list and commits a new list with the merged manifests in place
// of those they replace (the writers' new manifests kept as they are), as
// iceberg-go's own retry does. Only when a replaced manifest is gone is the
// merge redone on the refreshed table.
func (e *Executor) rewriteManifests(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	var rep Report
	if job.DryRun {
		return e.countManifests(ctx, job)
	}
	mr := &manifestRewrite{e: e, log: log, job: job, rep: &rep}
	loop := commitLoop{e: e, log: log, job: job, rep: &rep, files: mr}
	committed, err := loop.run(ctx, mr.attempt)
	if err != nil {
		return retryOutcome(err, rep.Attempts), rep
	}
	if mr.noop {
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	rep.Commits = 1
	rep.ManifestsRewritten, rep.ManifestsAdded = len(mr.replaced), len(mr.merged)
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	return jobs.Result{Outcome: jobs.Succeeded, Table: committed}, rep
}

// manifestRewrite is one manifest-rewrite job's commit state.
type manifestRewrite struct {
	e   *Executor
	log *slog.Logger
	job jobs.Job
	rep *Report
	fs  iceio.IO
	tbl *table.Table // as the first attempt loaded it

	// The merge staged last: its snapshot id and summary, the manifests it
	// wrote and those they replace.
	sw              *commit.SnapshotWriter
	props           iceberg.Properties
	merged          []iceberg.ManifestFile
	replaced        []iceberg.ManifestFile
	supersededPaths []string

	noop bool
}

// attempt is the commit loop's attempt body: the staged merge committed
// again on tbl while what it replaces is still there, else a fresh merge.
func (mr *manifestRewrite) attempt(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	if mr.fs == nil {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return nil, fmt.Errorf("open table io: %w", err)
		}
		mr.fs, mr.tbl = fs, tbl
	}
	if mr.merged != nil {
		committed, ok, err := mr.reuse(ctx, tbl)
		if ok || err != nil {
			return committed, err
		}
		mr.log.Info("a manifest the merge replaces is gone; merging again", "attempt", mr.rep.Attempts)
		mr.supersede()
	}
	return mr.merge(ctx, tbl)
}

// merge stages and commits a fresh merge through iceberg-go.
func (mr *manifestRewrite) merge(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	keys := jobs.NewKeyer(tbl.Metadata())
	if err := mr.e.checkMetadataLog(tbl); err != nil {
		return nil, err
	}
	cluster := func(df iceberg.DataFile) any { return keys.Key(df.SpecID(), df.Partition()) }
	if FitsInOneManifest(tbl, mr.fs) {
		// One manifest per partition would leave as many manifests as
		// partitions, and the next rewrite due that many appends sooner;
		// when everything fits in one manifest of the target size, one
		// it is (its partition bounds cover them all, at a size too
		// small for pruning to matter).
		cluster = func(iceberg.DataFile) any { return oneManifest{} }
	}
	txn := tbl.NewTransaction()
	res, err := txn.RewriteManifests(ctx, table.WithRewriteManifestClusterBy(cluster))
	if err != nil {
		return nil, fmt.Errorf("rewrite manifests: %w", err)
	}
	if res.IsNoOp() {
		mr.noop = true
		mr.log.Info("manifests need no rewrite", "why", res.NoOpReason.String())
		return nil, nil
	}
	if len(res.AddedManifests) >= len(res.RewrittenManifests) {
		// As many manifests out as in (one per partition already, or
		// partitions too large for one manifest): committing would only
		// add a snapshot, and the count would trigger again.
		mr.noop = true
		paths := stagedFiles(txn, mr.fs)
		for _, m := range res.AddedManifests {
			paths = append(paths, m.FilePath())
		}
		mr.rep.StagedMetadataCleanedUp += mr.e.removePaths(mr.tbl, mr.fs, paths, mr.log)
		mr.log.Info("manifests need no rewrite", "why", fmt.Sprintf("it would write %d manifests for the %d it reads",
			len(res.AddedManifests), len(res.RewrittenManifests)))
		return nil, nil
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return nil, fmt.Errorf("stage manifest rewrite: %w", err)
	}
	snap := staged.CurrentSnapshot()
	sw, err := commit.NewSnapshotWriter(tbl, mr.fs)
	if err != nil {
		return nil, err
	}
	sw.SnapshotID = snap.SnapshotID // the merged manifests carry it
	mr.sw, mr.merged, mr.replaced = sw, res.AddedManifests, res.RewrittenManifests
	mr.props = maps.Clone(snap.Summary.Properties)
	next, err := txn.Commit(ctx)
	if err == nil {
		return next, nil
	}
	// A catalog that reports conflicts as ErrCommitFailed (REST) lets
	// iceberg-go retry inside Commit, which may merge again and, once out
	// of retries, delete what it merged: reuse only what is still there.
	mr.merged, mr.replaced = res.AddedManifests, res.RewrittenManifests
	for _, m := range mr.merged {
		if !errors.Is(err, table.ErrCommitFailed) {
			break // iceberg-go returned at once
		}
		f, err := mr.fs.Open(m.FilePath())
		if err != nil {
			mr.merged, mr.replaced = nil, nil
			break
		}
		_ = f.Close()
	}
	return nil, mr.failed(snap.ManifestList, err)
}

// reuse commits the staged merge on tbl when every manifest it replaces is
// still there: one manifest list read, one written.
func (mr *manifestRewrite) reuse(ctx context.Context, tbl *table.Table) (*table.Table, bool, error) {
	head := tbl.CurrentSnapshot()
	if head == nil {
		return nil, false, fmt.Errorf("%w: table has no current snapshot", commit.ErrDiverged)
	}
	current, err := head.Manifests(mr.fs)
	if err != nil {
		return nil, false, fmt.Errorf("read manifest list of snapshot %d: %w", head.SnapshotID, err)
	}
	replaced := map[string]bool{}
	for _, m := range mr.replaced {
		replaced[m.FilePath()] = true
	}
	list := make([]iceberg.ManifestFile, 0, len(current))
	found := 0
	for _, m := range current {
		if !replaced[m.FilePath()] {
			list = append(list, m)
			continue
		}
		if found == 0 {
			list = append(list, mr.merged...)
		}
		found++
	}
	if found != len(replaced) {
		return nil, false, nil
	}
	props := maps.Clone(mr.props)
	for _, k := range []string{commit.SumTotalDataFiles, commit.SumTotalDeleteFiles, commit.SumTotalRecords, commit.SumTotalFileSize, commit.SumTotalPosDeletes, commit.SumTotalEqDeletes} {
		delete(props, k)
	}
	props[commit.SumManifestsKept] = strconv.Itoa(len(current) - len(mr.replaced))
	var previous iceberg.Properties
	if head.Summary != nil {
		previous = head.Summary.Properties
	}
	summary := commit.RebaseSummary(table.OpReplace, nil, props, previous)
	res, err := mr.sw.Commit(ctx, mr.e.cat, tbl, mr.rep.Attempts-1, list, summary)
	switch {
	case err == nil:
		mr.e.removeOwn(res.Committed, mr.fs, res.DroppedMetadata, mr.log)
		return res.Committed, true, nil
	case res.List == "":
		return nil, true, fmt.Errorf("stage manifest rewrite: %w", err)
	}
	return nil, true, mr.failed(res.List, err)
}

// failed hands the commit loop a failed commit of the manifest list at
// list.
func (mr *manifestRewrite) failed(list string, err error) error {
	return lost(err, mr.tbl, mr.fs, []string{list}, bySnapshotID, mr.sw.SnapshotID)
}

func (mr *manifestRewrite) supersede() {
	for _, m := range mr.merged {
		mr.supersededPaths = append(mr.supersededPaths, m.FilePath())
	}
	mr.merged, mr.replaced = nil, nil
}

func (mr *manifestRewrite) where() (*table.Table, iceio.IO) { return mr.tbl, mr.fs }
func (mr *manifestRewrite) superseded() []string            { return mr.supersededPaths }

// own are the merged manifests staged last: deleted unless they committed
// (or may have).
func (mr *manifestRewrite) own() []string {
	var paths []string
	for _, m := range mr.merged {
		paths = append(paths, m.FilePath())
	}
	return paths
}

// countManifests is rewrite_manifests' dry run: staging a rewrite writes
// manifest files, so it only counts the data manifests a rewrite would read.
func (e *Executor) countManifests(ctx context.Context, job jobs.Job) (jobs.Result, Report) {
	rep := Report{DryRun: true}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("load table: %w", err)}, rep
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("open table io: %w", err)}, rep
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("read manifest list: %w", err)}, rep
	}
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentData {
			rep.ManifestsRewritten++
		}
	}
	return jobs.Result{Outcome: jobs.Succeeded}, rep
}

// oneManifest is the cluster key that puts every data file in one manifest
// (per partition spec).
type oneManifest struct{}

// FitsInOneManifest reports whether the table's data manifests together
// are no larger than its target manifest size
// (commit.manifest.target-size-bytes): merged, they make one manifest, as
// Iceberg Java's RewriteManifests bins them by size; past it a rewrite
// clusters them by partition.
func FitsInOneManifest(tbl *table.Table, fs iceio.IO) bool {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return false
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return false // the merge reads them again and says why
	}
	target := int64(tbl.Properties().GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault))
	var total int64
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentData {
			total += m.Length()
		}
	}
	return total <= target
}
