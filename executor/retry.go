package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/planner"
)

// retryCommits runs op until it succeeds, returns a backoff.Permanent
// error, or the job's commit budget runs out. After a lost race the retry
// goes as soon as a writer has just committed to the table: at once if a
// commit was observed while the attempt ran, else at the next observed
// commit, waiting at most the jittered backoff (20 ms growing x1.5 to
// 500 ms), which is all it waits when no commit events arrive. An attempt
// costs about what a writer's commit costs, so many cheap attempts at the
// right moment beat a few patient ones. attempt reports the current attempt
// number and its start for the log.
func (e *Executor) retryCommits(ctx context.Context, log *slog.Logger, job planner.Job, op func() error,
	attempt func() (int, time.Time)) error {
	return e.retryCommitsInto(ctx, log, job, nil, op, attempt)
}

// retryCommitsInto is retryCommits counting, in rep when not nil, the
// retries that went on an observed writer commit. Every attempt first asks
// the commit guard (Options.CommitGuard): a refusal ends the loop with
// ErrCommitRefused, nothing committed.
func (e *Executor) retryCommitsInto(ctx context.Context, log *slog.Logger, job planner.Job, rep *Report, op func() error,
	attempt func() (int, time.Time)) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 20 * time.Millisecond
	bo.RandomizationFactor = 0.5
	bo.Multiplier = 1.5
	bo.MaxInterval = 500 * time.Millisecond
	bo.MaxElapsedTime = job.Settings.CommitRetryTime
	bo.Reset()
	for {
		// A replica that lost the table's lease stops here, before the
		// attempt: nothing of it is committed.
		if err := e.checkCommit(job.TableName); err != nil {
			return err
		}
		mark := e.watch.mark(job.TableName)
		err := op()
		if err == nil {
			return nil
		}
		var permanent *backoff.PermanentError
		if errors.As(err, &permanent) {
			return permanent.Err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return err
		}
		e.met.CommitRetries.WithLabelValues(job.TableName).Inc()
		n, started := attempt()
		cost := time.Since(started)
		waitStart := time.Now()
		observed := e.watch.wait(ctx, job.TableName, mark, wait)
		if observed && rep != nil {
			rep.RetriesAfterCommit++
		}
		log.Info("commit conflict; retrying", "attempt", n, "attempt_duration", cost,
			"waited", time.Since(waitStart), "after_writer_commit", observed, "error", err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// retryOutcome turns retryCommits' error into a job result: a budget spent
// on conflicts is GaveUp (the longer cool-down), anything else Failed.
func retryOutcome(err error, attempts int) planner.Result {
	if conflict.IsRetryable(err) {
		return planner.Result{Outcome: planner.GaveUp, Err: fmt.Errorf("gave up after %d attempts: %w", attempts, err)}
	}
	return planner.Result{Outcome: planner.Failed, Err: err}
}

// loadForAttempt loads the job's table at the start of a commit attempt:
// lock contention is retried like a conflict, anything else ends the job.
func (e *Executor) loadForAttempt(ctx context.Context, job planner.Job) (*table.Table, error) {
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err == nil {
		return tbl, nil
	}
	if conflict.IsTransient(err) {
		return nil, err
	}
	return nil, backoff.Permanent(fmt.Errorf("load table: %w", err))
}

// commitFailure classifies a failed catalog commit for retryCommits: a lost
// race is counted and retried, lock contention retried, anything else ends
// the job.
func (e *Executor) commitFailure(job planner.Job, rep *Report, what string, err error) error {
	switch {
	case conflict.Is(err):
		rep.Conflicts++
		e.met.CommitConflicts.WithLabelValues(job.TableName).Inc()
		return err
	case conflict.IsTransient(err):
		return err
	default:
		return backoff.Permanent(fmt.Errorf("commit %s: %w", what, err))
	}
}
