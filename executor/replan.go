package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/jobs"
)

// maxRewriteReplans bounds how often a data rewrite (compaction, sort) or a
// position-delete rewrite plans again after a concurrent writer added
// deletes against what it read. Each re-plan reads and writes the inputs
// again; a writer that deletes from the same files between every plan and
// its commit wins against any number of them, and is better met after the
// conflict cool-down than by a third rewrite now.
const maxRewriteReplans = 2

// replanned runs once (one plan, write and commit of the job) and, while
// again says its result was lost to a concurrent commit that a fresh plan
// can account for, runs it again: at most maxReplans more times, and only while
// the job's commit budget (CommitRetryTime), counted from the first lost
// attempt, lasts. It returns the last run's result and report, the report
// also counting what the abandoned runs did (addAbandoned), and how many
// re-plans there were. again may count in the abandoned run's report.
func (e *Executor) replanned(ctx context.Context, job jobs.Job, maxReplans int, once func() (jobs.Result, Report),
	again func(res jobs.Result, rep *Report, replan int) bool) (jobs.Result, Report, int) {
	var (
		abandoned Report
		deadline  time.Time
	)
	for replan := 0; ; replan++ {
		res, rep := once()
		if deadline.IsZero() {
			deadline = time.Now().Add(job.Settings.CommitRetryTime)
		}
		if replan < maxReplans && ctx.Err() == nil && time.Now().Before(deadline) && again(res, &rep, replan) {
			abandoned.addAbandoned(rep)
			continue
		}
		rep.addAbandoned(abandoned)
		return res, rep, replan
	}
}

// addAbandoned adds to r what a run the job planned again after still
// did: its commit attempts and conflicts, and the files it cleaned up (and
// a conversion's reads). Its other counts describe a plan that did not
// commit and are not the job's.
func (r *Report) addAbandoned(a Report) {
	r.Attempts += a.Attempts
	r.Conflicts += a.Conflicts
	r.RetriesAfterCommit += a.RetriesAfterCommit
	r.OutputFilesCleanedUp += a.OutputFilesCleanedUp
	r.StagedMetadataCleanedUp += a.StagedMetadataCleanedUp
	r.Conversion.BytesRead += a.Conversion.BytesRead
	r.Conversion.DataFilesScanned += a.Conversion.DataFilesScanned
}

// rewriteReplanned runs once, one plan of a data or position-delete
// rewrite, under replanned with replanOnNewDeletes: the rewrite plans again
// after a writer's new deletes against its inputs, and an error after the
// re-plans ran out says how many there were.
func (e *Executor) rewriteReplanned(ctx context.Context, log *slog.Logger, job jobs.Job, once func() (jobs.Result, Report)) (jobs.Result, Report) {
	res, rep, replans := e.replanned(ctx, job, maxRewriteReplans, once, e.replanOnNewDeletes(log, job))
	if replans > 0 && res.Outcome == jobs.GaveUp && errors.Is(res.Err, ErrNewDeletes) {
		res.Err = fmt.Errorf("gave up after %d re-plans: %w", replans, res.Err)
	}
	return res, rep
}

// replanOnNewDeletes is the again of replanned for a rewrite that commits
// once or in batches: a run that gave up on deletes a writer added against
// its inputs (ErrNewDeletes) with nothing of the job committed plans again
// from a freshly loaded table, whose plan reads the inputs with those
// deletes applied. A job with a batch committed keeps it (partial
// progress, Succeeded) and is not planned again. Each re-plan is a
// conflict lost to a writer, and counts as one.
func (e *Executor) replanOnNewDeletes(log *slog.Logger, job jobs.Job) func(jobs.Result, *Report, int) bool {
	return func(res jobs.Result, rep *Report, replan int) bool {
		if res.Outcome != jobs.GaveUp || rep.Commits > 0 || !errors.Is(res.Err, ErrNewDeletes) {
			return false
		}
		rep.Conflicts++
		e.met.CommitConflicts.WithLabelValues(job.Table.String()).Inc()
		attrs := []any{"replan", replan + 1, "max_replans", maxRewriteReplans, "error", res.Err}
		var nd *commit.NewDeletesError
		if errors.As(res.Err, &nd) {
			attrs = append(attrs, "deletes_snapshot_id", nd.SnapshotID)
		}
		log.Warn("a writer added deletes against the job's inputs before its commit; outputs deleted, replanning", attrs...)
		return true
	}
}
