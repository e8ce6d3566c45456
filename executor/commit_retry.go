package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/tablename"
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
func (e *Executor) retryCommits(ctx context.Context, log *slog.Logger, job jobs.Job, op func() error,
	attempt func() (int, time.Time)) error {
	return e.retryCommitsInto(ctx, log, job, nil, op, attempt)
}

// retryCommitsInto is retryCommits counting, in rep when not nil, the
// retries that went on an observed writer commit. Every attempt first asks
// the commit guard (Options.Ownership): a refusal ends the loop with
// ErrCommitRefused, nothing committed.
func (e *Executor) retryCommitsInto(ctx context.Context, log *slog.Logger, job jobs.Job, rep *Report, op func() error,
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
		if err := e.checkCommit(job.Table.String()); err != nil {
			return err
		}
		mark := e.watch.Mark(job.Table.String())
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
		e.met.CommitRetries.WithLabelValues(job.Table.String()).Inc()
		n, started := attempt()
		cost := time.Since(started)
		waitStart := time.Now()
		observed := e.watch.Wait(ctx, job.Table.String(), mark, wait)
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
func retryOutcome(err error, attempts int) jobs.Result {
	if conflict.IsRetryable(err) {
		return jobs.Result{Outcome: jobs.GaveUp, Err: fmt.Errorf("gave up after %d attempts: %w", attempts, err)}
	}
	return jobs.Result{Outcome: jobs.Failed, Err: err}
}

// loadForAttempt loads the job's table at the start of a commit attempt:
// lock contention is retried like a conflict, anything else ends the job.
func (e *Executor) loadForAttempt(ctx context.Context, job jobs.Job) (*table.Table, error) {
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
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
func (e *Executor) commitFailure(job jobs.Job, rep *Report, what string, err error) error {
	switch {
	case conflict.Is(err):
		rep.Conflicts++
		e.met.CommitConflicts.WithLabelValues(job.Table.String()).Inc()
		return err
	case conflict.IsTransient(err):
		return err
	default:
		return backoff.Permanent(fmt.Errorf("commit %s: %w", what, err))
	}
}

// ErrCommitRefused: the guard refused a commit before it reached the
// catalog, so nothing of the attempt was committed and its files may go.
var ErrCommitRefused = errors.New("commit refused: this replica may not commit to the table")

// guardWith makes every commit of the executor ask g's CommitDeadline
// first (see Options.Ownership): with replicas, whether this process holds
// the table's lease (package lease), and until when; a commit must not
// outlive it.
func (e *Executor) guardWith(g ownership.Tables) {
	e.guard = g
	e.cat = &guardedCatalog{Catalog: e.cat, guard: g}
}

// checkCommit asks the guard (nil: always allowed).
func (e *Executor) checkCommit(name string) error {
	if e.guard == nil {
		return nil
	}
	if _, err := e.guard.CommitDeadline(name); err != nil {
		return fmt.Errorf("%w: %w", ErrCommitRefused, err)
	}
	return nil
}

// guardedCatalog asks its guard before every CommitTable and hands out
// tables that commit through it, so that a transaction's Commit (which
// goes to the catalog the table was loaded from) is guarded too.
type guardedCatalog struct {
	catalog.Catalog
	guard ownership.Tables
}

func (g *guardedCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := g.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return g.wrap(tbl), nil
}

func (g *guardedCatalog) wrap(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, g)
}

func (g *guardedCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement,
	updates []table.Update) (table.Metadata, string, error) {
	deadline, err := g.guard.CommitDeadline(tablename.Format(ident))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrCommitRefused, err)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return g.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// unknownUnlessRefused marks a commit error whose outcome the catalog did
// not tell as unknown (its files must stay), unless the guard refused the
// commit before it reached the catalog (nothing committed: they may go).
func unknownUnlessRefused(err error) error {
	if errors.Is(err, ErrCommitRefused) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnknownCommitState, err)
}

// CommitObserved tells the executor that a commit to table (its qualified
// name, "namespace.table") was just observed: a commit event or a new
// metadata file. A commit of that table that lost a race and is waiting to
// retry attempts at once. It never blocks. It is Options.CommitWatch's
// Observed: reactor run's triggers call that directly.
func (e *Executor) CommitObserved(name string) {
	e.watch.Observed(name)
}
