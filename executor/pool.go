package executor

import (
	"context"
	"sync"

	"github.com/icereactor/reactor/planner"
)

// Finisher receives every finished job with its report.
type Finisher func(ctx context.Context, job planner.Job, res planner.Result, rep Report)

// Pool runs dispatched jobs on at most n goroutines at once. The planner
// guarantees one job per table at a time; the pool bounds the total.
type Pool struct {
	ctx    context.Context
	exec   *Executor
	finish Finisher
	start  func(job planner.Job)
	sem    chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	stats PoolStats
}

// PoolStats counts what the pool has done (for progress lines and tests).
type PoolStats struct {
	Jobs      int
	Succeeded int
	Noop      int
	GaveUp    int
	Failed    int
	Conflicts int
	Attempts  int
	// FilesRewritten and FilesAdded sum the reports of succeeded jobs.
	FilesRewritten int
	FilesAdded     int
	// Last is the report of the last finished job.
	Last Report
}

// NewPool creates a pool whose jobs run under ctx: cancelling it abandons
// running jobs cleanly (their uncommitted outputs are deleted).
func NewPool(ctx context.Context, exec *Executor, concurrency int) *Pool {
	if concurrency < 1 {
		concurrency = 1
	}
	return &Pool{ctx: ctx, exec: exec, sem: make(chan struct{}, concurrency)}
}

// OnFinish sets where results go. Call it before the first Dispatch.
func (p *Pool) OnFinish(f Finisher) { p.finish = f }

// OnStart sets what is called when a job leaves the queue and starts
// running. Call it before the first Dispatch.
func (p *Pool) OnStart(f func(job planner.Job)) { p.start = f }

// Dispatch queues a job; it never blocks.
func (p *Pool) Dispatch(job planner.Job) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case p.sem <- struct{}{}:
		case <-p.ctx.Done():
			p.done(job, planner.Result{Outcome: planner.Failed, Err: p.ctx.Err()}, Report{})
			return
		}
		defer func() { <-p.sem }()
		if p.start != nil {
			p.start(job)
		}
		res, rep := p.exec.Run(p.ctx, job)
		p.done(job, res, rep)
	}()
}

func (p *Pool) done(job planner.Job, res planner.Result, rep Report) {
	p.mu.Lock()
	p.stats.Jobs++
	switch res.Outcome {
	case planner.Succeeded:
		p.stats.Succeeded++
		p.stats.FilesRewritten += rep.RewrittenDataFiles
		p.stats.FilesAdded += rep.AddedDataFiles
	case planner.Noop:
		p.stats.Noop++
	case planner.GaveUp:
		p.stats.GaveUp++
	default:
		p.stats.Failed++
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
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Wait blocks until every dispatched job has finished.
func (p *Pool) Wait() { p.wg.Wait() }
