package worker

// The polling safety net (thresholds key refresh_interval): every owned
// table is checked against the catalog at least that often, whatever
// events say. Writers that publish no events (an engine without the commit
// reporter, AWS S3 without notifications), an event lost with a NATS node,
// and tables created since the last discovery are all caught within an
// interval. A check asks the catalog for the table's current metadata
// location (one row of a SQL catalog, no metadata read; the tables due in
// the same tick share one query) and refreshes the table only when it is
// not the file the planner applied; a catalog with no such call is loaded
// instead.

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/tablename"
)

// Outcomes of a poll: the values of reactor_polls_total's outcome label.
const (
	PollUnchanged = "unchanged" // the catalog names the file the state was built from: nothing read
	PollChanged   = "changed"   // a new metadata file: the table was refreshed
	PollLoaded    = "loaded"    // no cheap location: the table was loaded and refreshed
	PollError     = "error"
)

// pollTick is how often the poller looks for due tables; pollers bounds the
// ticks' checks in flight (each tick's due tables are one round).
const (
	pollTick = time.Second
	pollers  = 4
)

// pollDue is when a table's next check is due and the round that last saw
// it among the targets.
type pollDue struct {
	at    time.Time
	round uint64
}

// PollState is a table's last poll, for the status pages.
type PollState struct {
	At      time.Time
	Outcome string
}

type poller struct {
	w       *Worker
	locate  func(ctx context.Context, ident table.Identifier) (string, error)
	batch   func(ctx context.Context, idents []table.Identifier) (map[string]string, error)
	refresh func(t tablename.Name, done func(error))
	slots   chan struct{}

	mu   sync.Mutex
	next map[string]pollDue
	last map[string]PollState
	// rounds counts round calls; an entry of next not stamped by the
	// latest round names a table no longer polled here (dropped, handed to
	// another replica) and is forgotten, so a fleet's churn does not grow
	// the maps.
	rounds uint64
	// discoverAt is when the next discovery of new tables is due.
	discoverAt time.Time
}

func newPoller(w *Worker, locate func(context.Context, table.Identifier) (string, error),
	batch func(context.Context, []table.Identifier) (map[string]string, error),
	refresh func(tablename.Name, func(error))) *poller {
	return &poller{w: w, locate: locate, batch: batch, refresh: refresh, slots: make(chan struct{}, pollers),
		next: map[string]pollDue{}, last: map[string]PollState{}}
}

func (p *poller) run(ctx context.Context) {
	defer p.w.bg.Done()
	t := time.NewTicker(pollTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.round(ctx, now)
		}
	}
}

// round checks the tables that are due, together: their locations are
// read in one call where the catalog allows (a batch per tick, so an idle
// fleet costs a fraction of a call per table per interval). A table first
// seen gets its first check at a random point of its interval, so a
// fleet's checks spread evenly instead of coming all at once.
func (p *poller) round(ctx context.Context, now time.Time) {
	due, shortest := p.dueAt(p.w.Planner.PollTargets(), now)
	if len(due) > 0 {
		select {
		case p.slots <- struct{}{}:
			p.mu.Lock()
			for _, t := range due {
				p.next[t.Table.String()] = pollDue{at: now.Add(t.Every), round: p.rounds}
			}
			p.mu.Unlock()
			p.w.bg.Add(1)
			go func() {
				defer p.w.bg.Done()
				defer func() { <-p.slots }()
				p.checkAll(ctx, due)
			}()
		default:
			// every checker busy: still due at the next tick
		}
	}
	// Tables created since the last discovery have no state to poll: a
	// discovery each interval brings them in (it loads only new tables).
	if shortest > 0 && now.After(p.discoverAt) {
		if !p.discoverAt.IsZero() {
			select {
			case p.w.discoverAgain <- struct{}{}:
			default:
			}
		}
		p.discoverAt = now.Add(shortest)
	}
}

// dueAt lists the targets due at now and the shortest interval among them;
// a target first seen is scheduled at a random point of its interval.
func (p *poller) dueAt(targets []planner.PollTarget, now time.Time) (due []planner.PollTarget, shortest time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rounds++
	polled := 0
	for _, t := range targets {
		if t.Every <= 0 {
			continue
		}
		polled++
		if shortest == 0 || t.Every < shortest {
			shortest = t.Every
		}
		name := t.Table.String()
		d, ok := p.next[name]
		if !ok {
			p.next[name] = pollDue{at: now.Add(time.Duration(rand.Int64N(int64(t.Every)))), round: p.rounds}
			continue
		}
		d.round = p.rounds
		p.next[name] = d
		if !now.Before(d.at) {
			due = append(due, t)
		}
	}
	if len(p.next) > polled || len(p.last) > polled {
		p.forgetLocked()
	}
	return due, shortest
}

// forgetLocked drops the tables the latest round did not list: their next
// check and their last poll.
func (p *poller) forgetLocked() {
	for name, d := range p.next {
		if d.round != p.rounds {
			delete(p.next, name)
		}
	}
	// A check in flight when its table was forgotten records after it.
	for name := range p.last {
		if _, ok := p.next[name]; !ok {
			delete(p.last, name)
		}
	}
}

// checkAll polls the tables due in one tick: the unchanged ones answered
// by one batch read of their locations, the others one by one.
func (p *poller) checkAll(ctx context.Context, due []planner.PollTarget) {
	var known map[string]string
	if p.batch != nil && len(due) > 1 {
		idents := make([]table.Identifier, len(due))
		for i, t := range due {
			idents[i] = t.Table.Ident()
		}
		var err error
		if known, err = p.batch(ctx, idents); err != nil && !errors.Is(err, catalogs.ErrNoCheapLocation) {
			p.w.log.Warn("reading the polled tables' locations failed; checking them one by one", "tables", len(due), "error", err)
		}
	}
	for _, t := range due {
		if ctx.Err() != nil {
			return
		}
		if loc, ok := known[t.Table.String()]; ok && t.Applied != "" && location.Identity(loc) == t.Applied {
			p.record(t.Table.String(), PollUnchanged)
			continue
		}
		p.check(ctx, t)
	}
}

// check polls one table.
func (p *poller) check(ctx context.Context, t planner.PollTarget) {
	loc, err := p.locate(ctx, t.Table.Ident())
	outcome := PollChanged
	switch {
	case err == nil && t.Applied != "" && location.Identity(loc) == t.Applied:
		p.record(t.Table.String(), PollUnchanged)
		return
	case errors.Is(err, catalogs.ErrNoCheapLocation):
		outcome = PollLoaded
	case err != nil:
		p.w.log.Warn("polling a table failed; the next interval tries again", "table", t.Table.String(), "error", err)
		p.record(t.Table.String(), PollError)
		return
	}
	done := make(chan error, 1)
	p.refresh(t.Table, func(err error) { done <- err })
	select {
	case err = <-done:
	case <-ctx.Done():
		return
	}
	if err != nil {
		if !errors.Is(err, planner.ErrNotOwned) {
			p.w.log.Warn("refreshing a polled table failed; the next interval tries again", "table", t.Table.String(), "error", err)
		}
		outcome = PollError
	} else if outcome == PollChanged {
		p.w.log.Debug("polling found a commit no event announced", "table", t.Table.String(), "metadata", loc)
	}
	p.record(t.Table.String(), outcome)
}

func (p *poller) record(name, outcome string) {
	p.w.Metrics.Polls.WithLabelValues(outcome).Inc()
	p.mu.Lock()
	p.last[name] = PollState{At: time.Now(), Outcome: outcome}
	p.mu.Unlock()
}

// state is a table's last poll.
func (p *poller) state(name string) (PollState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.last[name]
	return s, ok
}
