package triggers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/tablename"
)

// Refresher brings a table's state up to the catalog's current metadata
// (the planner): one call covers every event of the table that arrived
// before it started.
type Refresher interface {
	Refresh(ctx context.Context, t tablename.Name) (*table.Table, error)
}

// DefaultRefreshConcurrency bounds the table refreshes (catalog loads)
// running at once in one process.
const DefaultRefreshConcurrency = 8

// work is one event (or one record of a notification) waiting for its
// table's next refresh round.
type work struct {
	// refresh: the event names a commit; the round refreshes the table
	// unless covered says, at round time, that an earlier refresh already
	// applied it.
	refresh bool
	covered func() bool
	// apply completes the event once the round is over: tbl is the table
	// the round loaded (nil if no item needed a refresh) and err the
	// refresh's error. It acknowledges, dead-letters or redelivers.
	apply   func(tbl *table.Table, err error)
	msg     jetstream.Msg // kept in progress while it waits
	arrived time.Time
}

// tableQueue holds one table's waiting events. A table is idle, ready
// (in the run queue once) or running (one round at a time).
type tableQueue struct {
	// name keys the queue: the table's name, or a lane's.
	name  string
	table tablename.Name // zero for a lane
	items []*work
	state queueState
	// urgent: an urgent item waits for the table's next round (counted
	// in Coalescer.urgent until that round ends).
	urgent bool
	// round runs the table's items; nil: the refresh round.
	round func(ctx context.Context, items []*work)
}

type queueState uint8

const (
	queueIdle queueState = iota
	queueReady
	queueRunning
)

// Coalescer collapses the events of a table into one refresh of its newest
// metadata and refreshes different tables in parallel, at most workers at
// once. Tables take turns (first ready, first served; a table whose events
// arrive while its round runs goes to the back of the line), so no table
// waits behind another table's events. An event's message is acknowledged
// by its apply, after the round whose refresh covers it: a crash before
// that redelivers it.
type Coalescer struct {
	ctx       context.Context
	refresher Refresher
	log       *slog.Logger
	met       *metrics.Metrics
	ackWait   time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	tables  map[string]*tableQueue
	ready   []*tableQueue // FIFO; head at readyAt
	readyAt int
	pending int // items waiting or in a round
	closed  bool
	// refreshed hears the name of every table a round refreshed (the
	// commit consumer's fast lane follows which tables are hot); set
	// once, before events flow.
	refreshed func(name string)
	// starting is told a table's refresh starts, and the func it returns
	// whether it succeeded (the commit consumer's sweep, sweep.go); set
	// once, before events flow.
	starting func(name string) func(ok bool)
	urgent   urgentRounds  // the delivery yields to them (yield.go)
	done     chan struct{} // closed by Close
	wg       sync.WaitGroup
}

// NewCoalescer starts workers refresh workers (DefaultRefreshConcurrency
// when 0) under ctx. ackWait is the consumers' AckWait: events waiting
// longer than half of it are kept in progress. Both consumers share one,
// so a table's commit events and metadata notifications coalesce together.
func NewCoalescer(ctx context.Context, r Refresher, workers int, ackWait time.Duration, log *slog.Logger, met *metrics.Metrics) *Coalescer {
	if workers <= 0 {
		workers = DefaultRefreshConcurrency
	}
	c := &Coalescer{ctx: ctx, refresher: r, log: log, met: met, ackWait: ackWait, tables: map[string]*tableQueue{},
		done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	for range workers {
		c.wg.Add(1)
		go c.work()
	}
	c.wg.Add(1)
	go c.keepInProgress()
	met.SetRefreshSource(c.lags)
	return c
}

// add queues an item for table t's next refresh round.
func (c *Coalescer) add(t tablename.Name, w *work) {
	c.enqueue(t.String(), t, nil, w, false)
}

// addLane queues an item for a lane: a queue of its own, whose round is
// given instead of a refresh.
func (c *Coalescer) addLane(lane string, round func(context.Context, []*work), w *work) {
	c.enqueue(lane, tablename.Name{}, round, w, false)
}

// addUrgent queues an item for the named table and puts the table at the
// head of the line (moving it up if it was waiting already): the fast
// lane's look at a hot table is served before the tables ready before it.
// The table still runs one round at a time, so its order is kept.
func (c *Coalescer) addUrgent(t tablename.Name, w *work) {
	c.enqueue(t.String(), t, nil, w, true)
}

// onRoundStart sets the hook told each refresh's start and success.
func (c *Coalescer) onRoundStart(fn func(name string) func(ok bool)) {
	c.mu.Lock()
	c.starting = fn
	c.mu.Unlock()
}

// onRefreshed sets the hook that hears every table a round refreshed.
func (c *Coalescer) onRefreshed(fn func(name string)) {
	c.mu.Lock()
	c.refreshed = fn
	c.mu.Unlock()
}

func (c *Coalescer) enqueue(name string, t tablename.Name, round func(context.Context, []*work), w *work, urgent bool) {
	w.arrived = time.Now()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		// Shutting down: let it come back to whoever consumes next.
		if w.msg != nil {
			_ = w.msg.Nak()
		}
		return
	}
	q, ok := c.tables[name]
	if !ok {
		q = &tableQueue{name: name, table: t, round: round}
		c.tables[name] = q
	}
	q.items = append(q.items, w)
	c.pending++
	if urgent && !q.urgent {
		q.urgent = true
		c.urgent.begin()
	}
	switch {
	case q.state == queueIdle && urgent:
		q.state = queueReady
		c.pushFrontLocked(q)
		c.cond.Signal()
	case q.state == queueIdle:
		q.state = queueReady
		c.ready = append(c.ready, q)
		c.cond.Signal()
	case q.state == queueReady && urgent:
		// Already in line: move it to the head (rare, hot tables only,
		// so the scan is cheap enough).
		for i := c.readyAt; i < len(c.ready); i++ {
			if c.ready[i] == q {
				copy(c.ready[c.readyAt+1:i+1], c.ready[c.readyAt:i])
				c.ready[c.readyAt] = q
				break
			}
		}
	}
	c.mu.Unlock()
}

// pushFrontLocked puts q at the head of the ready line.
func (c *Coalescer) pushFrontLocked(q *tableQueue) {
	if c.readyAt > 0 {
		c.readyAt--
		c.ready[c.readyAt] = q
		return
	}
	c.ready = append(c.ready, nil)
	copy(c.ready[1:], c.ready)
	c.ready[0] = q
}

// next waits for a ready table and takes its items; urgent says the
// round is an urgent one (see urgentRounds).
func (c *Coalescer) next() (q *tableQueue, items []*work, urgent, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.readyAt == len(c.ready) && !c.closed {
		c.cond.Wait()
	}
	if c.closed {
		return nil, nil, false, false
	}
	q = c.ready[c.readyAt]
	c.ready[c.readyAt] = nil
	c.readyAt++
	if c.readyAt > 1024 && c.readyAt*2 > len(c.ready) {
		c.ready = append(c.ready[:0], c.ready[c.readyAt:]...)
		c.readyAt = 0
	}
	items = q.items
	q.items = nil
	q.state = queueRunning
	urgent, q.urgent = q.urgent, false
	return q, items, urgent, true
}

func (c *Coalescer) work() {
	defer c.wg.Done()
	for {
		q, items, urgent, ok := c.next()
		if !ok {
			return
		}
		if q.round != nil {
			q.round(c.ctx, items)
		} else {
			c.refreshRound(q, items)
		}
		if urgent {
			c.urgent.end()
		}
		c.mu.Lock()
		c.pending -= len(items)
		if len(q.items) > 0 && !c.closed {
			q.state = queueReady
			c.ready = append(c.ready, q)
			c.cond.Signal()
		} else {
			q.state = queueIdle
		}
		c.mu.Unlock()
	}
}

// refreshRound refreshes the table once if any of its items still needs
// it, then completes every item.
func (c *Coalescer) refreshRound(q *tableQueue, items []*work) {
	need := false
	for _, it := range items {
		if it.refresh && (it.covered == nil || !it.covered()) {
			need = true
			break
		}
	}
	var (
		tbl *table.Table
		err error
	)
	if need {
		c.mu.Lock()
		starting := c.starting
		c.mu.Unlock()
		var done func(bool)
		if starting != nil {
			done = starting(q.name)
		}
		tbl, err = c.refresher.Refresh(c.ctx, q.table)
		if done != nil {
			done(err == nil)
		}
		result := "applied"
		if err != nil {
			result = "error"
		}
		c.met.Refreshes.WithLabelValues(result).Inc()
		c.mu.Lock()
		refreshed := c.refreshed
		c.mu.Unlock()
		if err == nil && refreshed != nil {
			refreshed(q.name)
		}
	}
	if n := len(items); n > 1 || !need {
		// Events acknowledged without a catalog load of their own.
		c.met.EventsCoalesced.Add(float64(n - boolInt(need)))
	}
	for _, it := range items {
		it.apply(tbl, err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keepInProgress tells JetStream that events waiting longer than half the
// ack wait (a table whose refresh is slow, a long queue) are still being
// worked on, so they are not redelivered meanwhile.
func (c *Coalescer) keepInProgress() {
	defer c.wg.Done()
	if c.ackWait <= 0 {
		return
	}
	t := time.NewTicker(c.ackWait / 4)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.done:
			return
		case <-t.C:
		}
		cutoff := time.Now().Add(-c.ackWait / 2)
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		for _, q := range c.tables {
			for _, it := range q.items {
				if it.msg != nil && it.arrived.Before(cutoff) {
					_ = it.msg.InProgress()
					it.arrived = time.Now()
				}
			}
		}
		c.mu.Unlock()
	}
}

// lags reports, for every table seen, how long its oldest event not yet
// applied has waited (0: all applied), and the queue depths.
func (c *Coalescer) lags() metrics.RefreshState {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := metrics.RefreshState{Lag: make(map[string]float64, len(c.tables)), PendingEvents: c.pending,
		ReadyTables: len(c.ready) - c.readyAt}
	for name, q := range c.tables {
		if q.round != nil {
			continue
		}
		lag := 0.0
		if len(q.items) > 0 {
			lag = now.Sub(q.items[0].arrived).Seconds()
		}
		st.Lag[name] = lag
	}
	return st
}

// forget drops what the coalescer knows of a table that has nothing
// pending (its lag series goes with it).
func (c *Coalescer) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.tables[name]; ok && q.state == queueIdle && len(q.items) == 0 {
		delete(c.tables, name)
	}
}

// Close stops the workers once their rounds end and hands every event
// still waiting back to JetStream for immediate redelivery. Stop the
// consumers first.
func (c *Coalescer) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.done)
	var left []*work
	for _, q := range c.tables {
		left = append(left, q.items...)
		q.items = nil
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	for _, it := range left {
		if it.msg != nil {
			_ = it.msg.Nak()
		}
	}
	c.wg.Wait()
	c.met.SetRefreshSource(nil)
}

// Poll queues a refresh of the table for the polling safety net: it takes
// its turn like an event's and shares the round of any event waiting, and
// done hears the refresh's error once the round is over.
func (c *Coalescer) Poll(t tablename.Name, done func(error)) {
	c.add(t, &work{refresh: true, apply: func(_ *table.Table, err error) { done(err) }})
}
