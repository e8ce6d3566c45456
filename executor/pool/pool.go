// Package pool runs the planner's jobs on a bounded number of goroutines:
// it orders the jobs waiting for a slot by the priority the planner gave
// them, hands the jobs an Offloader takes to another backend (Spark), and
// reports every finished job.
//
//   - pool.go: Pool, Options, New, Dispatch, the ownership a job's table
//     must still have when it leaves the queue (mayRun), offloading, Abandon and WaitTables (replicas),
//     Stats.
//   - slots.go: the local slots — earliest deadline first, urgent before
//     background, one slot kept for urgent jobs.
//
// It owns the order and the bound of running jobs. It must not decide a
// job's priority (the planner's, jobs.Job.Priority) or how a job runs
// (the Runner's: the executor).
package pool

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/redact"
)

// Runner runs one job in this process: the executor.
type Runner interface {
	Run(ctx context.Context, job jobs.Job) (jobs.Result, executor.Report)
}

// Finisher receives every finished job with its report.
type Finisher func(ctx context.Context, job jobs.Job, res jobs.Result, rep executor.Report)

// Offloader runs jobs on another backend (a Spark cluster). The pool asks
// it about every job before the job takes one of the pool's own slots.
type Offloader interface {
	// Offload reports whether job goes to the other backend. It must be
	// quick and must not block.
	Offload(job jobs.Job) bool
	// Run runs job on the other backend, calling started once the job
	// has been handed over. local reports that the job did not run there
	// and is to run in this process now (the job was never handed over,
	// or it failed there with its end confirmed and the policy allows it):
	// res and rep are then ignored. Run returns only once the other
	// backend no longer runs the job, so the planner's one job per table
	// holds across both.
	Run(ctx context.Context, job jobs.Job, started func()) (res jobs.Result, rep executor.Report, local bool)
}

// Pool runs dispatched jobs on at most n goroutines at once. The planner
// guarantees one job per table at a time; the pool bounds the total and
// orders the jobs waiting for a slot (see slots: urgent before background,
// first come first served within a priority). Jobs
// an Offloader takes run under its own bound and take no local slot unless
// they come back to run here.
type Pool struct {
	ctx     context.Context
	exec    Runner
	finish  Finisher
	start   func(job jobs.Job, backend string)
	slots   *slots
	offload Offloader
	offSem  chan struct{}
	own     ownership.Tables
	wg      sync.WaitGroup

	mu    sync.Mutex
	stats Stats
	// jobs are the dispatched jobs not finished yet, by id.
	jobs map[string]*poolJob
	// idle is signalled whenever a job finishes.
	idle *sync.Cond
}

type poolJob struct {
	table  string
	cancel context.CancelFunc
}

// Stats counts what the pool has done (for progress lines and tests).
type Stats struct {
	Jobs      int
	Succeeded int
	Noop      int
	GaveUp    int
	Failed    int
	Conflicts int
	Attempts  int
	// Offloaded counts the jobs that finished on the other backend.
	Offloaded int
	// FilesRewritten and FilesAdded sum the reports of succeeded jobs.
	FilesRewritten int
	FilesAdded     int
	// Last is the report of the last finished job.
	Last executor.Report
}

// Options configure a pool; only Runner is required.
type Options struct {
	// Runner runs the jobs that run in this process.
	Runner Runner
	// Concurrency bounds the jobs running here at once; 0 means 1.
	Concurrency int
	// Metrics receive the queue's gauges and waits (nil: a fresh set).
	Metrics *metrics.Metrics
	// Ownership, when set, is asked when a job leaves the queue (with
	// replicas: whether this replica still owns the table); a job of a
	// table it does not own ends Failed with ownership.ErrNotHeld, having
	// done nothing. Nil: every table is this process's.
	Ownership ownership.Tables
	// Offloader, when set, takes the jobs it selects to its backend, at
	// most OffloadConcurrency at once (0 means 1).
	Offloader          Offloader
	OffloadConcurrency int
	// OnStart is called when a job leaves the queue and starts running,
	// with the backend it runs on (executor.BackendLocal,
	// executor.BackendSpark). A job that comes back from the other
	// backend to run here starts again.
	OnStart func(job jobs.Job, backend string)
	// OnFinish receives every finished job.
	OnFinish Finisher
}

// mayRun: a job leaving the queue runs only while this replica owns its
// table (the same words as lease.Manager.MayRun).
func (p *Pool) mayRun(job jobs.Job) error {
	if p.own == nil {
		return nil
	}
	if name := job.Table.String(); !p.own.Owns(name) {
		return fmt.Errorf("%w: %s (shard %d)", ownership.ErrNotHeld, name, p.own.ShardOf(name))
	}
	return nil
}

// New creates a pool whose jobs run under ctx: cancelling it abandons
// running jobs cleanly (their uncommitted outputs are deleted).
func New(ctx context.Context, o Options) *Pool {
	met := o.Metrics
	if met == nil {
		met = metrics.New()
	}
	p := &Pool{ctx: ctx, exec: o.Runner, slots: newSlots(max(o.Concurrency, 1), met), jobs: map[string]*poolJob{},
		own: o.Ownership, start: o.OnStart, finish: o.OnFinish}
	if o.Offloader != nil {
		p.offload = o.Offloader
		p.offSem = make(chan struct{}, max(o.OffloadConcurrency, 1))
	}
	p.idle = sync.NewCond(&p.mu)
	return p
}

// Abandon cancels the queued and running jobs of the tables sel selects:
// they end cleanly (their uncommitted outputs deleted) and report Failed.
func (p *Pool) Abandon(sel func(table string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range p.jobs {
		if sel(j.table) {
			j.cancel()
		}
	}
}

// WaitTables blocks until no job of the tables sel selects is queued or
// running, or ctx ends.
func (p *Pool) WaitTables(ctx context.Context, sel func(table string) bool) {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.idle.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for ctx.Err() == nil {
		busy := false
		for _, j := range p.jobs {
			busy = busy || sel(j.table)
		}
		if !busy {
			return
		}
		p.idle.Wait()
	}
}

// Dispatch queues a job; it never blocks.
func (p *Pool) Dispatch(job jobs.Job) {
	ctx, cancel := context.WithCancel(p.ctx)
	p.mu.Lock()
	p.jobs[job.ID] = &poolJob{table: job.Table.String(), cancel: cancel}
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.forget(job.ID, cancel)
		if err := p.mayRun(job); err != nil {
			p.done(job, jobs.Result{Outcome: jobs.Failed, Err: err}, executor.Report{})
			return
		}
		if p.offload != nil && p.offload.Offload(job) {
			res, rep, local, ok := p.runOffloaded(ctx, job)
			if !ok {
				return
			}
			if !local {
				p.done(job, res, rep)
				return
			}
		}
		release, ok := p.slots.acquire(ctx, job)
		if !ok {
			p.done(job, jobs.Result{Outcome: jobs.Failed, Err: context.Cause(ctx)}, executor.Report{})
			return
		}
		defer release()
		// It may have waited long for its slot.
		if err := p.mayRun(job); err != nil {
			p.done(job, jobs.Result{Outcome: jobs.Failed, Err: err}, executor.Report{})
			return
		}
		if p.start != nil {
			p.start(job, executor.BackendLocal)
		}
		res, rep := p.runRecovered(ctx, job)
		p.done(job, res, rep)
	}()
}

// runRecovered runs job, a panic failing it with a *redact.PanicError
// instead of ending the process: a file that makes a decoder panic fails
// its job on every pass, not the replica (the executor's defers, which
// delete uncommitted outputs, have run by then).
func (p *Pool) runRecovered(ctx context.Context, job jobs.Job) (res jobs.Result, rep executor.Report) {
	defer func() {
		if v := recover(); v != nil {
			res, rep = jobs.Result{Outcome: jobs.Failed, Err: redact.Panic(v, debug.Stack())}, executor.Report{}
		}
	}()
	return p.exec.Run(ctx, job)
}

func (p *Pool) forget(id string, cancel context.CancelFunc) {
	cancel()
	p.mu.Lock()
	delete(p.jobs, id)
	p.idle.Broadcast()
	p.mu.Unlock()
}

// runOffloaded runs job on the other backend under its bound; ok is false
// when the pool stopped before it started (the job is then finished).
func (p *Pool) runOffloaded(ctx context.Context, job jobs.Job) (res jobs.Result, rep executor.Report, local, ok bool) {
	select {
	case p.offSem <- struct{}{}:
	case <-ctx.Done():
		p.done(job, jobs.Result{Outcome: jobs.Failed, Err: ctx.Err()}, executor.Report{Backend: executor.BackendSpark})
		return res, rep, false, false
	}
	defer func() { <-p.offSem }()
	res, rep, local = p.offload.Run(ctx, job, func() {
		if p.start != nil {
			p.start(job, executor.BackendSpark)
		}
	})
	return res, rep, local, true
}

func (p *Pool) done(job jobs.Job, res jobs.Result, rep executor.Report) {
	p.mu.Lock()
	p.stats.Jobs++
	switch res.Outcome {
	case jobs.Succeeded:
		p.stats.Succeeded++
		p.stats.FilesRewritten += rep.RewrittenDataFiles
		p.stats.FilesAdded += rep.AddedDataFiles
	case jobs.Noop:
		p.stats.Noop++
	case jobs.GaveUp:
		p.stats.GaveUp++
	default:
		p.stats.Failed++
	}
	if rep.Backend == executor.BackendSpark {
		p.stats.Offloaded++
	}
	p.stats.Conflicts += rep.Conflicts
	p.stats.Attempts += rep.Attempts
	p.stats.Last = rep
	p.mu.Unlock()
	if p.finish != nil {
		// The planner must hear about the job even while shutting down,
		// so use a context that outlives the pool's.
		p.finish(context.WithoutCancel(p.ctx), job, res, rep)
	}
}

// Stats returns a copy of the counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Wait blocks until every dispatched job has finished.
func (p *Pool) Wait() { p.wg.Wait() }
