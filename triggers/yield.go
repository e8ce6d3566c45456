package triggers

import (
	"sync"
	"sync/atomic"
	"time"
)

// Yielding to urgent rounds: on a small machine the durable consumer
// churning through a backlog (delivering, decoding, acknowledging tens of
// thousands of events a second) takes the CPU the fast lane's refresh of
// a hot table needs, so that refresh would still finish late. While an
// urgent round is waiting or running, the durable consumers' delivery
// therefore pauses before each event, for at most maxYield at a time and
// maxYieldShare of every second, so the backlog is slowed, never stopped.
// Pausing changes no order and no outcome: the event is handled as it
// would have been, a little later.
const (
	maxYield      = 20 * time.Millisecond
	maxYieldShare = 250 * time.Millisecond // per second of delivery
)

// urgentRounds counts the urgent rounds waiting or running and lets the
// delivery goroutines wait for them.
type urgentRounds struct {
	n atomic.Int32 // read without the lock on every delivered event

	mu     sync.Mutex
	idle   chan struct{} // closed when n drops to 0
	window time.Time     // start of the current second of the budget
	spent  time.Duration // paused in it
}

// begin counts one more urgent round.
func (u *urgentRounds) begin() {
	u.mu.Lock()
	if u.n.Load() == 0 {
		u.idle = make(chan struct{})
	}
	u.n.Add(1)
	u.mu.Unlock()
}

// end counts one urgent round done.
func (u *urgentRounds) end() {
	u.mu.Lock()
	if u.n.Add(-1) == 0 {
		close(u.idle)
	}
	u.mu.Unlock()
}

// wait pauses while urgent rounds are waiting or running, within the
// budget, or until done is closed.
func (u *urgentRounds) wait(done <-chan struct{}) {
	if u.n.Load() == 0 {
		return
	}
	now := time.Now()
	u.mu.Lock()
	if u.n.Load() == 0 {
		u.mu.Unlock()
		return
	}
	if now.Sub(u.window) >= time.Second {
		u.window, u.spent = now, 0
	}
	budget := min(maxYield, maxYieldShare-u.spent)
	idle := u.idle
	u.mu.Unlock()
	if budget <= 0 {
		return
	}
	t := time.NewTimer(budget)
	select {
	case <-idle:
	case <-t.C:
	case <-done:
	}
	t.Stop()
	u.mu.Lock()
	u.spent += time.Since(now)
	u.mu.Unlock()
}

// yieldToUrgent is called by the durable consumers' delivery before each
// event (see maxYield).
func (c *Coalescer) yieldToUrgent() { c.urgent.wait(c.done) }
