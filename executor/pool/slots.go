package pool

import (
	"context"
	"sync"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
)

// backgroundSlack is how much later than an urgent job a background job
// may start: a background job that has waited this long ranks as urgent
// jobs queued at the same time (so none starves).
const backgroundSlack = 10 * time.Minute

// slots hands the pool's local slots to waiting jobs: earliest deadline
// first, a job's deadline being when it was queued (plus backgroundSlack
// for background jobs), so among urgent jobs it is first come, first
// served — the planner keeps one job per table, so that is one turn per
// table — and a backlog of maintenance (after a restart, every table's
// expiry and listing come due) never holds up a hot table's compaction.
// With two slots or more, background jobs take at most all but one, so an
// urgent job never waits for a long listing to end.
type slots struct {
	size, backgroundLimit int
	met                   *metrics.Metrics
	now                   func() time.Time

	mu                sync.Mutex
	running           int
	runningBackground int
	queues            [2][]*slotWaiter // by jobkind.Priority, FIFO
}

type slotWaiter struct {
	class    jobkind.Priority
	kind     jobkind.Kind
	queued   time.Time
	deadline time.Time
	grant    chan struct{}
	granted  bool
}

func newSlots(size int, met *metrics.Metrics) *slots {
	size = max(size, 1)
	return &slots{size: size, backgroundLimit: max(size-1, 1), met: met, now: time.Now}
}

// acquire waits for a slot for job; false when ctx ended first.
func (s *slots) acquire(ctx context.Context, job jobs.Job) (release func(), ok bool) {
	now := s.now()
	w := &slotWaiter{class: job.Priority, kind: job.Kind, queued: now, deadline: now, grant: make(chan struct{})}
	if w.class == jobkind.PriorityBackground {
		w.deadline = now.Add(backgroundSlack)
	}
	s.mu.Lock()
	s.queues[w.class] = append(s.queues[w.class], w)
	s.dispatchLocked()
	s.mu.Unlock()
	select {
	case <-w.grant:
	case <-ctx.Done():
		s.mu.Lock()
		if !w.granted {
			s.removeLocked(w)
			s.gaugesLocked()
			s.mu.Unlock()
			return nil, false
		}
		s.mu.Unlock()
	}
	s.met.JobQueueWait.WithLabelValues(w.kind.String()).Observe(time.Since(w.queued).Seconds())
	return func() {
		s.mu.Lock()
		s.running--
		if w.class == jobkind.PriorityBackground {
			s.runningBackground--
		}
		s.dispatchLocked()
		s.mu.Unlock()
	}, true
}

// dispatchLocked grants free slots to the best waiters.
func (s *slots) dispatchLocked() {
	for s.running < s.size {
		u, b := s.head(jobkind.PriorityUrgent), s.head(jobkind.PriorityBackground)
		bgFree := s.runningBackground < s.backgroundLimit
		var next *slotWaiter
		switch {
		case u != nil && b != nil && bgFree && b.deadline.Before(u.deadline):
			next = b
		case u != nil:
			next = u
		case b != nil && bgFree:
			next = b
		}
		if next == nil {
			break
		}
		s.queues[next.class] = s.queues[next.class][1:]
		next.granted = true
		s.running++
		if next.class == jobkind.PriorityBackground {
			s.runningBackground++
		}
		close(next.grant)
	}
	s.gaugesLocked()
}

func (s *slots) head(c jobkind.Priority) *slotWaiter {
	if len(s.queues[c]) == 0 {
		return nil
	}
	return s.queues[c][0]
}

func (s *slots) removeLocked(w *slotWaiter) {
	q := s.queues[w.class]
	for i, x := range q {
		if x == w {
			s.queues[w.class] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}

func (s *slots) gaugesLocked() {
	for c := range s.queues {
		s.met.JobQueue.WithLabelValues(jobkind.Priority(c).String()).Set(float64(len(s.queues[c])))
	}
	s.met.JobsRunning.Set(float64(s.running))
}
