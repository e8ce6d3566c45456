package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/executor/pool"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/sizelimit"
)

// jobLoop is reactor run's job loop, named: the planner schedules a job
// and the loop announces it and hands it to the pool (dispatch); the pool
// runs it and hands back its end, which the loop counts, announces and
// tells the planner, which plans the table's next job (finish). It is
// built before the planner and the pool and handed to both (newJobLoop
// builds them around it), so neither calls into a part assigned later.
type jobLoop struct {
	planner *planner.Planner
	pool    *pool.Pool
	out     announcer
	met     *metrics.Metrics
	log     *slog.Logger
	// healthPrefix: after every job, the table's health report goes to
	// healthPrefix.<table>.
	healthPrefix string
}

// announcer is where the loop's job events and reports go: the worker's
// NATS link, best effort, and the status pages' job history.
type announcer interface {
	publishJob(ev events.JobEvent)
	publish(subject string, v any)
}

// loopOptions are the parts the loop is built from.
type loopOptions struct {
	// Planner configures the planner; its Dispatch is the loop's and its
	// Ownership the loop's.
	Planner planner.Options
	// Runner runs the jobs here (the executor); Offloader takes those its
	// rules select to Spark, at most OffloadConcurrency at once.
	Runner             pool.Runner
	Concurrency        int
	Offloader          pool.Offloader
	OffloadConcurrency int
	// Ownership: the planner keeps and schedules only owned tables, and
	// a job starts only while its table is owned.
	Ownership    ownership.Tables
	Out          announcer
	Metrics      *metrics.Metrics
	Logger       *slog.Logger
	HealthPrefix string
}

// newJobLoop builds the loop, then the pool whose jobs end in its finish,
// then the planner whose jobs go to its dispatch. Jobs reach the pool only
// through the planner, so no job can end before both exist. Jobs run under
// ctx: cancelling it abandons them cleanly.
func newJobLoop(ctx context.Context, o loopOptions) *jobLoop {
	l := &jobLoop{out: o.Out, met: o.Metrics, log: o.Logger, healthPrefix: o.HealthPrefix}
	l.pool = pool.New(ctx, pool.Options{Runner: o.Runner, Concurrency: o.Concurrency, Metrics: o.Metrics,
		Ownership: o.Ownership, Offloader: o.Offloader, OffloadConcurrency: o.OffloadConcurrency,
		OnStart: l.started, OnFinish: l.finish})
	o.Planner.Dispatch, o.Planner.Ownership = l.dispatch, o.Ownership
	l.planner = planner.New(o.Planner)
	return l
}

// dispatch is the planner's Dispatcher: the scheduled event, then the
// pool's queue. It never blocks (the planner holds the table's lock).
func (l *jobLoop) dispatch(job jobs.Job) {
	l.out.publishJob(jobEvent(events.JobScheduled, job, time.Now()))
	l.pool.Dispatch(job)
}

// started is the pool's OnStart: the started event, with the backend the
// job runs on.
func (l *jobLoop) started(job jobs.Job, backend string) {
	ev := jobEvent(events.JobStarted, job, time.Now())
	ev.Backend = backend
	l.out.publishJob(ev)
}

// finish is the pool's Finisher: every job's end is counted, announced,
// told to the planner and followed by the table's health report.
func (l *jobLoop) finish(ctx context.Context, job jobs.Job, res jobs.Result, rep executor.Report) {
	var tooLarge *sizelimit.Error
	if errors.As(res.Err, &tooLarge) {
		l.met.SizeLimitRefusals.WithLabelValues(string(tooLarge.Kind)).Inc()
	}
	var panicked *redact.PanicError
	if errors.As(res.Err, &panicked) {
		// The executor never got to count it or say it ended.
		l.log.Error("job panicked; it failed, reactor keeps running", "table", job.Table.String(), "job_id", job.ID,
			"kind", job.Kind, "panic", panicked.Value, "stack", panicked.Stack)
		l.met.Jobs.WithLabelValues(job.Kind.String(), metrics.JobFailed).Inc()
	}
	// Before Finished: it may schedule the table's next job, whose
	// scheduled event must come after this job's end.
	if job.Kind == jobkind.RemoveOrphans && res.Outcome != jobs.Failed {
		left := len(rep.Orphans.Orphans)
		if !rep.Orphans.DryRun {
			left -= rep.Orphans.DeletedFiles
		}
		l.met.OrphanCandidates.WithLabelValues(job.Table.String()).Set(float64(left))
	}
	l.out.publishJob(finishedEvent(job, res, rep, time.Now()))
	if job.Kind == jobkind.RemoveOrphans && len(rep.Orphans.Orphans) > 0 {
		l.out.publish(DefaultOrphanSubjectPrefix+"."+job.Table.String(), rep.Orphans)
	}
	l.planner.Finished(ctx, job, res)
	l.reportHealth(job.Table.String())
}

// reportHealth logs the table's health and publishes it (best effort: a
// report is a snapshot in time; the next job sends another).
func (l *jobLoop) reportHealth(table string) {
	h, ok := l.planner.Health(table)
	if !ok {
		return
	}
	attrs := []any{"table", table, "healthy", h.Healthy, "data_files", h.DataFiles, "avg_file_size", h.AvgFileSize,
		"target_file_size", h.TargetFileSize, "tiny_files", h.TinyFiles, "snapshots", h.Snapshots,
		"oldest_snapshot_age", h.OldestSnapshotAge.Round(time.Second), "data_manifests", h.DataManifests}
	if h.Healthy {
		l.log.Info("table health", attrs...)
	} else {
		l.log.Warn("table health", append(attrs, "problems", h.Problems)...)
	}
	l.out.publish(l.healthPrefix+"."+table, h)
}
