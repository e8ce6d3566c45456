package sparkrun

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/sparkcall"
	"github.com/icereactor/reactor/thresholds"
)

// Options configure a Runner.
type Options struct {
	// Catalog is reactor's catalog: the Runner reads the table through it
	// (to render, and to learn what Spark committed), never commits.
	Catalog catalog.Catalog
	// CatalogName is reactor's name for it, the Spark catalog name unless
	// the spark section sets catalog.
	CatalogName string
	// Config is the thresholds document in force (it may be reloaded).
	Config  *thresholds.Config
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	// Dial opens a job's session; nil is [Dial].
	Dial Dialer
	// Records signs the record of the snapshots a Spark job committed
	// (nil: a key of this process alone; a restarted planner then reads
	// them as another writer's).
	Records *deletions.Keyring
	// interruptEvery is how often an interrupt is repeated while waiting
	// for its confirmation (tests shorten it).
	interruptEvery time.Duration
}

// Runner is the Spark backend: a [github.com/icereactor/reactor/executor/pool.Offloader].
type Runner struct {
	cat     catalog.Catalog
	catName string
	cfg     atomic.Pointer[thresholds.Config]
	log     *slog.Logger
	met     *metrics.Metrics
	dial    Dialer
	every   time.Duration
	keys    *deletions.Keyring
	// stop is closed by Stop: running statements are interrupted.
	stop     chan struct{}
	stopOnce sync.Once
}

// New creates a Runner.
func New(opts Options) *Runner {
	r := &Runner{cat: opts.Catalog, catName: opts.CatalogName, log: opts.Logger, met: opts.Metrics, dial: opts.Dial,
		every: opts.interruptEvery, stop: make(chan struct{}), keys: opts.Records}
	if r.keys == nil {
		r.keys = deletions.EphemeralKeyring()
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.met == nil {
		r.met = metrics.New()
	}
	if r.dial == nil {
		r.dial = Dial
	}
	if r.every <= 0 {
		r.every = 5 * time.Second
	}
	r.SetConfig(opts.Config)
	return r
}

// SetConfig replaces the thresholds document (a reload). Spark's
// concurrency is fixed when the pool is built: a change takes effect on
// restart.
func (r *Runner) SetConfig(cfg *thresholds.Config) {
	if cfg == nil {
		cfg = thresholds.Default()
	}
	r.cfg.Store(cfg)
}

func (r *Runner) settings() thresholds.SparkSettings {
	s := r.cfg.Load().SparkSettings()
	if s.Catalog == "" {
		s.Catalog = r.catName
	}
	return s
}

// Stop interrupts every running Spark statement now (reactor is shutting
// down), as a cancelled context does; each Run still returns only once
// Spark confirmed the end or interrupt_grace ran out. New jobs are not
// refused: the planner stops scheduling first.
func (r *Runner) Stop() { r.stopOnce.Do(func() { close(r.stop) }) }

// Offload reports whether the spark rules send job to Spark.
func (r *Runner) Offload(job jobs.Job) bool {
	d := Decide(job, r.settings())
	if d.Backend == executor.BackendSpark {
		r.log.Info("job goes to Spark", "table", job.Table.String(), "job_id", job.ID, "kind", job.Kind,
			"input_files", job.InputFiles, "input_bytes", job.InputBytes, "why", d.Why)
	}
	return d.Backend == executor.BackendSpark
}

// Tag is the Spark Connect operation tag of a job's statements.
func Tag(job jobs.Job) string { return "reactor-job-" + job.ID }

// Run runs job on Spark (see [github.com/icereactor/reactor/executor/pool.Offloader]).
func (r *Runner) Run(ctx context.Context, job jobs.Job, started func()) (jobs.Result, executor.Report, bool) {
	set := r.settings()
	log := executor.JobLogger(r.log, job, executor.BackendSpark)
	start := time.Now()
	rep := executor.Report{Backend: executor.BackendSpark}
	finish := func(res jobs.Result) (jobs.Result, executor.Report, bool) {
		rep.Duration = time.Since(start)
		executor.RecordFinished(log, r.met, job, res, rep)
		return res, rep, false
	}
	// notRun: Spark never ran the job, or failed it with its end known.
	notRun := func(err error) (jobs.Result, executor.Report, bool) {
		if ok, why := set.AllowedLocally(job.InputBytes, job.InputFiles); ok {
			r.met.SparkLocalRuns.WithLabelValues("spark_failed").Inc()
			log.Warn("Spark did not run the job; running it locally", "error", err, "why", why,
				"input_files", job.InputFiles, "input_bytes", job.InputBytes)
			return jobs.Result{}, executor.Report{}, true
		} else {
			log.Warn("Spark did not run the job; it is retried on Spark after the cool-down", "error", err, "why", why)
		}
		return finish(jobs.Result{Outcome: jobs.Failed, Err: err})
	}

	before, err := r.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return finish(jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("load table: %w", err)})
	}
	stmts, err := sparkcall.Render(job, before.Metadata(), sparkcall.Options{Catalog: set.Catalog, Now: time.Now()})
	if err != nil || len(stmts) == 0 {
		why := "nothing to send (no partition)"
		if err != nil {
			why = err.Error()
		}
		r.met.SparkLocalRuns.WithLabelValues("not_expressible").Inc()
		log.Info("job stays local: Spark cannot run it faithfully", "why", why)
		return jobs.Result{}, executor.Report{}, true
	}

	dialCtx, cancel := context.WithTimeout(ctx, set.ConnectTimeout)
	sess, err := r.dial(dialCtx, set, set.Catalog, Tag(job))
	cancel()
	if err != nil {
		return notRun(fmt.Errorf("spark: %w", err))
	}
	defer sess.Close()

	started()
	log.Info("job started", "partitions", job.PartitionKeys(), "reason", job.ReasonText(),
		"endpoint", redact.String(set.Endpoint), "catalog", set.Catalog, "statements", len(stmts), "timeout", set.Timeout)
	deadline := time.Now().Add(set.Timeout)
	var (
		end     = endedOK
		lastErr error
	)
	nothing := map[string]string{}
	for i, st := range stmts {
		log.Info("spark statement", "statement", i+1, "of", len(stmts), "sql", st.SQL)
		prev := rep
		columns, rows, e, err := r.execute(ctx, log, sess, st.SQL, deadline, set.InterruptGrace)
		end, lastErr = e, err
		if end != endedOK {
			break
		}
		if err := addResult(&rep, st, columns, rows); err != nil {
			end, lastErr = endedFailed, err
			break
		}
		if changedNothing(job.Kind, prev, rep) {
			for _, p := range st.Partitions {
				nothing[p] = "Spark's " + st.Procedure + " rewrote nothing there"
			}
		}
		if rep.FailedDataFiles > prev.FailedDataFiles {
			// Spark committed some groups and lost others to conflicts
			// (partial progress): its retries are its own; count them.
			rep.Conflicts++
			r.met.CommitConflicts.WithLabelValues(job.Table.String()).Inc()
			log.Warn("Spark could not commit some rewrite groups (conflicts)", "failed_data_files", rep.FailedDataFiles-prev.FailedDataFiles)
		}
	}
	rep.Attempts = 1

	res := jobs.Result{Err: lastErr}
	after, err := r.cat.LoadTable(context.WithoutCancel(ctx), job.Table.Ident())
	if err == nil {
		r.account(&rep, &res, job, before, after)
		r.recordOwnSnapshots(context.WithoutCancel(ctx), log, job, after, res.OwnSnapshots)
	} else {
		log.Warn("could not reload the table after the Spark job", "error", err)
	}
	if len(nothing) > 0 {
		res.NothingToDo = nothing
	}
	switch end {
	case endedOK:
		res.Outcome = jobs.Succeeded
		if rep.Commits == 0 && job.Kind != jobkind.RemoveOrphans {
			res.Outcome = jobs.Noop
		}
		if job.Kind == jobkind.RemoveOrphans {
			rep.Orphans.Source, rep.Orphans.DryRun = jobs.OrphansFromListing, job.DryRun || !job.Settings.OrphanDelete
			if !rep.Orphans.DryRun {
				rep.Orphans.DeletedFiles = len(rep.Orphans.Orphans)
			}
			if len(rep.Orphans.Orphans) == 0 {
				res.Outcome = jobs.Noop
			}
		}
	case endedConflict:
		rep.Conflicts++
		r.met.CommitConflicts.WithLabelValues(job.Table.String()).Inc()
		res.Outcome = jobs.GaveUp
	case endedFailed:
		if rep.Commits == 0 {
			return notRun(lastErr)
		}
		res.Outcome = jobs.Failed
	default:
		// Interrupted (timeout, shutdown) or unconfirmed: never run
		// locally too; the planner retries after the cool-down.
		res.Outcome = jobs.Failed
		if end == endedUnconfirmed {
			r.met.SparkUnconfirmed.Inc()
		}
	}
	if res.Outcome == jobs.Succeeded || res.Outcome == jobs.Noop {
		res.Err = nil
	}
	return finish(res)
}

// account fills in what Spark committed, from the table before and after:
// the snapshots it added, the one now current, the snapshots an expiry
// removed; and the committed table for the planner.
func (r *Runner) account(rep *executor.Report, res *jobs.Result, job jobs.Job, before, after *table.Table) {
	known := map[int64]bool{}
	for _, s := range before.Metadata().Snapshots() {
		known[s.SnapshotID] = true
	}
	if cur := before.CurrentSnapshot(); cur != nil {
		rep.PlannedFromSnapshotID = cur.SnapshotID
	}
	remaining := map[int64]bool{}
	for _, s := range after.Metadata().Snapshots() {
		remaining[s.SnapshotID] = true
	}
	for id := range known {
		if !remaining[id] {
			rep.Expiry.ExpiredSnapshots++
		}
	}
	for s := after.CurrentSnapshot(); s != nil && !known[s.SnapshotID]; {
		// Only snapshots Spark's procedure writes (replace) are the job's;
		// a streaming writer's appends in between are not.
		if s.Summary != nil && s.Summary.Operation == table.OpReplace {
			rep.Commits++
			res.OwnSnapshots = append(res.OwnSnapshots, s.SnapshotID)
			if rep.CommittedSnapshotID == 0 {
				rep.CommittedSnapshotID = s.SnapshotID
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = after.Metadata().SnapshotByID(*s.ParentSnapshotID)
	}
	if job.Kind == jobkind.ExpireSnapshots && rep.Expiry.ExpiredSnapshots > 0 {
		rep.Commits = 1
	}
	if rep.Commits > 0 {
		res.Table = after
	}
}

// execute runs one statement under the job's deadline. A statement still
// running at the deadline, or when ctx ends (reactor shutting down), is
// interrupted through Spark Connect, and execute waits up to grace for
// Spark to end it; a connection lost mid-statement is followed by
// interrupts until Spark answers, for up to grace. It returns only once
// the statement is over on Spark or grace has run out (endedUnconfirmed).
func (r *Runner) execute(ctx context.Context, log *slog.Logger, sess Session, sql string, deadline time.Time, grace time.Duration) ([]string, [][]any, ending, error) {
	type result struct {
		columns []string
		rows    [][]any
		err     error
	}
	execCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan result, 1)
	go func() {
		c, rows, err := sess.Exec(execCtx, sql)
		done <- result{c, rows, elide(err, sql)}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var why string
	select {
	case x := <-done:
		end := classify(x.err)
		if end != endedUnconfirmed || isUnknownCommit(x.err) {
			return x.columns, x.rows, end, redact.Error(x.err)
		}
		// The connection broke: Spark may still be running it.
		log.Warn("lost the Spark Connect connection mid-statement; interrupting the job's operations until Spark answers",
			"error", redact.Error(x.err), "interrupt_grace", grace)
		if r.confirmGone(log, sess, grace) {
			return nil, nil, endedInterrupted, fmt.Errorf("spark: connection lost mid-statement (the operation was interrupted or is gone): %w", redact.Error(x.err))
		}
		return nil, nil, endedUnconfirmed, fmt.Errorf("spark: connection lost mid-statement and Spark unreachable for %s: the end of the operation is not confirmed: %w",
			grace, redact.Error(x.err))
	case <-timer.C:
		why = "timeout"
	case <-ctx.Done():
		why = "shutdown"
	case <-r.stop:
		why = "shutdown"
	}
	log.Warn("interrupting the Spark job", "why", why, "interrupt_grace", grace)
	r.met.SparkInterrupts.WithLabelValues(why).Inc()
	waitUntil := time.Now().Add(grace)
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	for {
		ictx, icancel := context.WithTimeout(context.Background(), r.every)
		ids, gone, err := sess.Interrupt(ictx)
		icancel()
		if err != nil {
			log.Warn("interrupt failed", "error", err)
		} else {
			log.Info("interrupt sent", "interrupted", ids, "session_gone", gone)
		}
		select {
		case x := <-done:
			log.Info("Spark ended the interrupted statement", "error", redact.Error(x.err))
			return nil, nil, endedInterrupted, fmt.Errorf("spark: job interrupted (%s); Spark confirmed the end", why)
		case <-tick.C:
		}
		if time.Now().After(waitUntil) {
			cancel()
			log.Error("Spark did not confirm the end of the interrupted statement within interrupt_grace; releasing the table", "why", why)
			return nil, nil, endedUnconfirmed, fmt.Errorf("spark: job interrupted (%s) and its end not confirmed within %s", why, grace)
		}
	}
}

// elide returns err with the statement it quotes (the client repeats the
// whole CALL in its message) cut to the procedure's name: the statement is
// in the job's "spark statement" log line already, and job events stay
// readable. errors.Is and errors.As still see err.
func elide(err error, sql string) error {
	if err == nil || !strings.Contains(err.Error(), sql) {
		return err
	}
	short := sql
	if i := strings.Index(sql, "("); i > 0 {
		short = sql[:i] + "(...)"
	}
	return &elided{msg: strings.ReplaceAll(err.Error(), sql, short), err: err}
}

type elided struct {
	msg string
	err error
}

func (e *elided) Error() string { return e.msg }
func (e *elided) Unwrap() error { return e.err }

// confirmGone interrupts the job's operations until Spark answers (it
// stopped them, or has no such session any more) or grace runs out.
func (r *Runner) confirmGone(log *slog.Logger, sess Session, grace time.Duration) bool {
	until := time.Now().Add(grace)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), r.every)
		ids, gone, err := sess.Interrupt(ctx)
		cancel()
		if err == nil {
			log.Info("Spark answered the interrupt", "interrupted", ids, "session_gone", gone)
			return true
		}
		if time.Now().Add(r.every).After(until) {
			log.Error("Spark stayed unreachable; the end of the job's operation is not confirmed", "error", err, "interrupt_grace", grace)
			return false
		}
		time.Sleep(r.every)
	}
}
