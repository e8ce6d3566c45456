package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/jobs"
)

// commitLoop is the one attempt loop every commit of the executor goes
// through, as iceberg-go's doCommit is for its transactions: each attempt
// asks the commit guard, loads the table (the first attempt may be handed
// one), counts itself and runs the job's attempt body on that table. A
// commit the catalog refused as a lost race or lock contention is retried
// (its attempt's own files deleted at once) as soon as a writer has just
// committed to the table, else after a jittered backoff, until the job's
// commit budget (CommitRetryTime) runs out. A commit whose outcome the
// catalog did not tell is looked up in the table's history before
// anything is retried or deleted; one not found there ends the loop with
// errUnknownCommitState, and nothing that commit may reference is
// deleted. When the loop ends without a commit, the files the job's
// commit wrote once for all attempts (files) are deleted too.
//
// The attempt body's contract (attemptBody): plan, write and validate on
// the table it is handed, then commit. It returns the committed table; nil
// and no error when there is nothing to commit; lost(...) when the
// catalog's commit failed; any other error ends the loop as it is.
type commitLoop struct {
	e   *Executor
	log *slog.Logger
	job jobs.Job
	// rep counts the attempts, conflicts and retries that went on an
	// observed writer commit, and the own files deleted.
	rep *Report
	// first is the table the first attempt commits on; nil: the catalog's
	// head, loaded like every later attempt's.
	first *table.Table
	// reloadAnyError retries a failed reload within the commit budget
	// whatever its error (the replay path's rule), not only lock
	// contention.
	reloadAnyError bool
	// countCommitsOnly counts (in rep) only the attempts that reached the
	// catalog: dead-delete removal, which finishes a compaction whose
	// report it shares, plans on every attempt and may find nothing.
	countCommitsOnly bool
	// files, when set, are the files the commit wrote once for all its
	// attempts (commit.Staged's manifests, a manifest rewrite's merged
	// manifests).
	files ownFiles

	n       int       // attempts so far
	started time.Time // the current attempt's start
}

// attemptBody is one attempt of a job's commit, on tbl, the table loaded
// for it (see commitLoop for its contract).
type attemptBody func(ctx context.Context, tbl *table.Table) (*table.Table, error)

// ownFiles are the files a commit writes once for all its attempts.
type ownFiles interface {
	// where says the table and FileIO to delete them through; a nil fs:
	// nothing written yet.
	where() (*table.Table, iceio.IO)
	// own are the files the commit adds: deleted when it gives up.
	own() []string
	// superseded are those a re-stage replaced: deleted when the loop
	// ends, committed or not.
	superseded() []string
}

// lookup says how a commit whose outcome is unknown is looked up.
type lookup int

const (
	// byJobID: a snapshot carrying the job's id in the table's recent
	// history (the transaction paths, whose snapshot id iceberg-go picks
	// per attempt).
	byJobID lookup = iota
	// bySnapshotID: the snapshot id the attempt committed (commit.SnapshotWriter).
	bySnapshotID
	// noLookup: the commit adds no snapshot (expiry); its outcome stays
	// unknown.
	noLookup
)

// lostCommit is an attempt's failed catalog commit, as the attempt body
// hands it to the loop.
type lostCommit struct {
	err error
	// staged are the files only this attempt wrote (its manifest list,
	// the manifests iceberg-go re-staged): nothing references them if the
	// commit lost, and they are deleted at once, through tbl and fs.
	staged []string
	tbl    *table.Table
	fs     iceio.IO
	lookup lookup
	// snapshotID is the snapshot the attempt committed (bySnapshotID).
	snapshotID int64
}

func (c *lostCommit) Error() string { return c.err.Error() }
func (c *lostCommit) Unwrap() error { return c.err }

// lost is what an attempt body returns when the catalog's commit failed
// with err: staged are the files only the attempt wrote, deleted through
// tbl and fs if the commit lost a race, and how says how to look the
// commit up if its outcome is unknown.
func lost(err error, tbl *table.Table, fs iceio.IO, staged []string, how lookup, snapshotID int64) error {
	return &lostCommit{err: err, staged: staged, tbl: tbl, fs: fs, lookup: how, snapshotID: snapshotID}
}

// run runs body attempt by attempt (see commitLoop) and returns the
// committed table (nil when the body found nothing to commit). After a
// lost race the retry goes as soon as a writer has just committed to the
// table: at once if a commit was observed while the attempt ran, else at
// the next observed commit, waiting at most the jittered backoff (20 ms
// growing x1.5 to 500 ms), which is all it waits when no commit events
// arrive. An attempt costs about what a writer's commit costs, so many
// cheap attempts at the right moment beat a few patient ones.
func (l *commitLoop) run(ctx context.Context, body attemptBody) (*table.Table, error) {
	name := l.job.Table.String()
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 20 * time.Millisecond
	bo.RandomizationFactor = 0.5
	bo.Multiplier = 1.5
	bo.MaxInterval = 500 * time.Millisecond
	bo.MaxElapsedTime = l.job.Settings.CommitRetryTime
	bo.Reset()
	for {
		// A replica that lost the table's lease stops here, before the
		// attempt: nothing of it is committed.
		if err := l.e.checkCommit(name); err != nil {
			return l.end(nil, err)
		}
		mark := l.e.watch.Mark(name)
		committed, err := l.attempt(ctx, body)
		if err == nil {
			return l.end(committed, nil)
		}
		var permanent *backoff.PermanentError
		if errors.As(err, &permanent) {
			return l.end(nil, permanent.Err)
		}
		if ctx.Err() != nil {
			return l.end(nil, ctx.Err())
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return l.end(nil, err)
		}
		l.e.met.CommitRetries.WithLabelValues(name).Inc()
		cost := time.Since(l.started)
		waitStart := time.Now()
		observed := l.e.watch.Wait(ctx, name, mark, wait)
		if observed {
			l.rep.RetriesAfterCommit++
		}
		l.log.Info("commit conflict; retrying", "attempt", l.n, "attempt_duration", cost,
			"waited", time.Since(waitStart), "after_writer_commit", observed, "error", err)
		if ctx.Err() != nil {
			return l.end(nil, ctx.Err())
		}
	}
}

// attempt is one attempt: its table loaded, the body run, a failed commit
// classified. It returns a plain error for a retry, a backoff.Permanent
// one to end the loop.
func (l *commitLoop) attempt(ctx context.Context, body attemptBody) (*table.Table, error) {
	l.n++
	l.started = time.Now()
	if !l.countCommitsOnly {
		l.rep.Attempts++
	}
	tbl, err := l.load(ctx)
	if err != nil {
		return nil, err
	}
	committed, err := body(ctx, tbl)
	var lc *lostCommit
	if !errors.As(err, &lc) {
		if err != nil {
			var permanent *backoff.PermanentError
			if errors.As(err, &permanent) {
				return nil, err
			}
			return nil, backoff.Permanent(err)
		}
		if committed != nil && l.countCommitsOnly {
			l.rep.Attempts++
		}
		return committed, nil
	}
	if l.countCommitsOnly {
		l.rep.Attempts++
	}
	if conflict.IsRetryable(lc.err) {
		// Nothing references this attempt's own files
		// (docs/design.md#pitfall-failed-attempt-garbage).
		if len(lc.staged) > 0 {
			l.rep.StagedMetadataCleanedUp += l.e.removePaths(lc.tbl, lc.fs, lc.staged, l.log)
		}
		if conflict.Is(lc.err) {
			l.rep.Conflicts++
			l.e.met.CommitConflicts.WithLabelValues(l.job.Table.String()).Inc()
		}
		return nil, lc.err
	}
	// The catalog may or may not have taken the commit. Look before
	// deciding; never delete what may be live.
	var landed *table.Table
	switch lc.lookup {
	case byJobID:
		landed = l.e.findCommitted(ctx, l.job)
	case bySnapshotID:
		landed = l.e.findSnapshot(ctx, l.job, lc.snapshotID)
	}
	if landed != nil {
		return landed, nil
	}
	return nil, backoff.Permanent(unknownUnlessRefused(lc.err))
}

// load loads the attempt's table: the one the loop was handed for its
// first attempt, else the catalog's head. Lock contention is retried like
// a conflict; anything else ends the loop, unless reloadAnyError.
func (l *commitLoop) load(ctx context.Context) (*table.Table, error) {
	if l.n == 1 && l.first != nil {
		return l.first, nil
	}
	tbl, err := l.e.cat.LoadTable(ctx, l.job.Table.Ident())
	switch {
	case err == nil:
		return tbl, nil
	case conflict.IsTransient(err):
		return nil, err
	case l.reloadAnyError:
		// The catalog blinking mid-job is retried within the same budget
		// as a conflict.
		l.log.Warn("reload for commit retry failed; will retry", "attempt", l.n, "error", err)
		return nil, fmt.Errorf("reload table: %w", err)
	}
	return nil, backoff.Permanent(fmt.Errorf("load table: %w", err))
}

// end deletes the commit's own files nothing references (all of them but
// those an unknown outcome may reference) and returns the loop's result.
func (l *commitLoop) end(committed *table.Table, err error) (*table.Table, error) {
	if l.files == nil || errors.Is(err, errUnknownCommitState) {
		return committed, err
	}
	tbl, fs := l.files.where()
	if fs == nil {
		return committed, err
	}
	paths := l.files.superseded()
	if err != nil {
		paths = append(paths, l.files.own()...)
	}
	l.rep.StagedMetadataCleanedUp += l.e.removePaths(tbl, fs, paths, l.log)
	return committed, err
}

// retryOutcome turns a commit loop's error into a job result: a budget
// spent on conflicts is GaveUp (the longer cool-down), anything else
// Failed.
func retryOutcome(err error, attempts int) jobs.Result {
	if conflict.IsRetryable(err) {
		return jobs.Result{Outcome: jobs.GaveUp, Err: fmt.Errorf("gave up after %d attempts: %w", attempts, err)}
	}
	return jobs.Result{Outcome: jobs.Failed, Err: err}
}

// findSnapshot loads the table and returns it when snapshot id is in its
// history: after an ambiguous commit error it tells whether that very
// commit landed (a job's earlier batches carry the same job id).
func (e *Executor) findSnapshot(ctx context.Context, job jobs.Job, id int64) *table.Table {
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil || tbl.Metadata().SnapshotByID(id) == nil {
		return nil
	}
	return tbl
}

// findCommitted looks for a snapshot carrying the job's id in the table's
// current history: after an ambiguous commit error it tells whether the
// commit landed after all.
func (e *Executor) findCommitted(ctx context.Context, job jobs.Job) *table.Table {
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return nil
	}
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.Summary != nil && s.Summary.Properties[jobs.SnapshotJobProperty] == job.ID {
			return tbl
		}
		if s.ParentSnapshotID == nil || s.TimestampMs < job.ScheduledAt.UnixMilli()-60_000 {
			return nil
		}
		s = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
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

func newReplans(job jobs.Job, limit int) *replans {
	return &replans{max: limit, budget: job.Settings.CommitRetryTime}
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
