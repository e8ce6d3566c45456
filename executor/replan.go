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

// replans is the budget of a job that plans again after its commit was
// lost to a concurrent commit a fresh plan can account for: at most max
// re-plans, and only while the job's commit budget (CommitRetryTime),
// counted from the end of the first plan, lasts. The report of the run it
// returns also counts what the abandoned runs did (addAbandoned).
type replans struct {
	max, n    int
	budget    time.Duration
	deadline  time.Time
	abandoned Report
}

func newReplans(job jobs.Job, max int) *replans {
	return &replans{max: max, budget: job.Settings.CommitRetryTime}
}

// allowed reports whether one more re-plan fits the budget; the caller
// then asks whether the run was lost to a commit a re-plan can account
// for, and abandons it.
func (r *replans) allowed(ctx context.Context) bool {
	if r.deadline.IsZero() {
		r.deadline = time.Now().Add(r.budget)
	}
	return r.n < r.max && ctx.Err() == nil && time.Now().Before(r.deadline)
}

// abandon counts a run that plans again.
func (r *replans) abandon(rep Report) {
	r.abandoned.addAbandoned(rep)
	r.n++
}

// last is the report of the run the job ends with, the abandoned runs
// counted in.
func (r *replans) last(rep Report) Report {
	rep.addAbandoned(r.abandoned)
	return rep
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

// endRewrite is the result of a data or position-delete rewrite's last
// run: an error after the re-plans ran out says how many there were.
func (r *replans) endRewrite(res jobs.Result, rep Report) (jobs.Result, Report) {
	if r.n > 0 && res.Outcome == jobs.GaveUp && errors.Is(res.Err, ErrNewDeletes) {
		res.Err = fmt.Errorf("gave up after %d re-plans: %w", r.n, res.Err)
	}
	return res, r.last(rep)
}

// lostToNewDeletes reports whether a run of a rewrite that commits once
// or in batches plans again: a run that gave up on deletes a writer added against
// its inputs (ErrNewDeletes) with nothing of the job committed plans again
// from a freshly loaded table, whose plan reads the inputs with those
// deletes applied. A job with a batch committed keeps it (partial
// progress, Succeeded) and is not planned again. Each re-plan is a
// conflict lost to a writer, and counts as one.
func (e *Executor) lostToNewDeletes(log *slog.Logger, job jobs.Job, res jobs.Result, rep *Report, replan int) bool {
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
