package executor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/planner"
)

// retryCommits runs op until it succeeds, returns a backoff.Permanent
// error, or the job's commit budget runs out. Waits are short and
// jittered (20 ms growing x1.5 to 500 ms): an attempt has to land between
// two writer commits, so many cheap attempts beat a few patient ones.
// attempt reports the current attempt number and its start for the log.
func (e *Executor) retryCommits(ctx context.Context, log *slog.Logger, job planner.Job, op func() error,
	attempt func() (int, time.Time)) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 20 * time.Millisecond
	bo.RandomizationFactor = 0.5
	bo.Multiplier = 1.5
	bo.MaxInterval = 500 * time.Millisecond
	bo.MaxElapsedTime = job.Settings.CommitRetryTime
	notify := func(err error, wait time.Duration) {
		e.met.CommitRetries.WithLabelValues(job.TableName).Inc()
		n, started := attempt()
		log.Info("commit conflict; retrying", "attempt", n, "attempt_duration", time.Since(started), "wait", wait, "error", err)
	}
	return backoff.RetryNotify(op, backoff.WithContext(bo, ctx), notify)
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
