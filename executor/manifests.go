package executor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/planner"
)

// rewriteManifests merges the table's data manifests into target-sized ones
// clustered by partition, so every later scan, rewrite and commit reads a
// handful of manifests instead of one per streaming append (DESIGN.md
// pitfall 5). It writes no data: a conflict simply redoes it against the
// refreshed table, within the job's commit budget.
func (e *Executor) rewriteManifests(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var (
		rep       Report
		committed *table.Table
		noop      bool
	)
	if job.DryRun {
		return e.countManifests(ctx, job)
	}
	var attemptStart time.Time
	op := func() error {
		rep.Attempts++
		attemptStart = time.Now()
		tbl, err := e.loadForAttempt(ctx, job)
		if err != nil {
			return err
		}
		keys := planner.NewKeyer(tbl.Metadata())
		txn := tbl.NewTransaction()
		res, err := txn.RewriteManifests(ctx, table.WithRewriteManifestClusterBy(func(df iceberg.DataFile) any {
			return keys.Key(df.SpecID(), df.Partition())
		}))
		if err != nil {
			return backoff.Permanent(fmt.Errorf("rewrite manifests: %w", err))
		}
		if res.IsNoOp() {
			noop = true
			log.Info("manifests need no rewrite", "why", res.NoOpReason.String())
			return nil
		}
		if len(res.AddedManifests) >= len(res.RewrittenManifests) {
			// As many manifests out as in (one per partition already, or
			// partitions too large for one manifest): committing would
			// only add a snapshot, and the count would trigger again.
			noop = true
			fs, err := tbl.FS(ctx)
			if err == nil {
				paths := stagedFiles(txn, fs)
				for _, m := range res.AddedManifests {
					paths = append(paths, m.FilePath())
				}
				rep.StagedMetadataCleanedUp += removePaths(fs, paths, log)
			}
			log.Info("manifests need no rewrite", "why", fmt.Sprintf("it would write %d manifests for the %d it reads",
				len(res.AddedManifests), len(res.RewrittenManifests)))
			return nil
		}
		next, err := txn.Commit(ctx)
		if err == nil {
			committed = next
			rep.ManifestsRewritten, rep.ManifestsAdded = len(res.RewrittenManifests), len(res.AddedManifests)
			return nil
		}
		return e.commitFailure(job, &rep, "manifest rewrite", err)
	}
	if err := e.retryCommits(ctx, log, job, op, func() (int, time.Time) { return rep.Attempts, attemptStart }); err != nil {
		return retryOutcome(err, rep.Attempts), rep
	}
	if noop {
		return planner.Result{Outcome: planner.Noop}, rep
	}
	rep.Commits = 1
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	return planner.Result{Outcome: planner.Succeeded, Table: committed}, rep
}

// countManifests is rewrite_manifests' dry run: staging a rewrite writes
// manifest files, so it only counts the data manifests a rewrite would read.
func (e *Executor) countManifests(ctx context.Context, job planner.Job) (planner.Result, Report) {
	rep := Report{DryRun: true}
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("load table: %w", err)}, rep
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return planner.Result{Outcome: planner.Noop}, rep
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("open table io: %w", err)}, rep
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("read manifest list: %w", err)}, rep
	}
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentData {
			rep.ManifestsRewritten++
		}
	}
	return planner.Result{Outcome: planner.Succeeded}, rep
}
