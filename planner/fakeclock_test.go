package planner

import (
	"sort"
	"sync"
	"time"
)

// fakeClock is a manual clock for tests of time-based scheduling: its Now and
// AfterFunc go in Options, and Advance moves time on, running every timer
// that comes due on the way, in deadline order, on the caller's goroutine
// (no timer goroutine: a test sees the jobs a deadline scheduled as soon
// as Advance returns).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*clockTimer
}

// newFakeClock returns a clock reading start.
func newFakeClock(start time.Time) *fakeClock { return &fakeClock{now: start} }

type clockTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func (t *clockTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Now reads the clock.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f once the clock has been advanced by d.
func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &clockTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Set moves the clock to t without running timers (t before now: now
// stays).
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

// Advance moves the clock d forward, running each timer due by then at its
// deadline (the clock reads the deadline while it runs).
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		live := c.timers[:0]
		for _, t := range c.timers {
			if !t.stopped {
				live = append(live, t)
			}
		}
		c.timers = live
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		if len(c.timers) == 0 || c.timers[0].at.After(end) {
			c.now = end
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		t.stopped = true
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}

// next is the earliest deadline of a live timer.
func (c *fakeClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, t := range c.timers {
		if !t.stopped && (at.IsZero() || t.at.Before(at)) {
			at = t.at
		}
	}
	return at, !at.IsZero()
}
