package triggers

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/events"
)

// HotTables is what the fast lane asks of the planner (an Applier that
// has it gets one): whether a table is near a threshold, so its next
// commit may make a job.
type HotTables interface {
	NearThreshold(name string) bool
}

// DefaultFastLanes bounds the tables given a fast lane at once in one
// process: each costs a subscription and a second copy of its events (a
// few microseconds each), so a lake where every table is near a threshold
// pays that for this many only; the others keep the ordinary path.
const DefaultFastLanes = 1024

// fastLane lets the commit event of a hot table (one the planner says is
// near a threshold, owned here) overtake the events queued before it in
// the commit stream. The durable consumer delivers the stream in order,
// so behind a backlog of other tables' events a hot table's event would
// wait for all of them; the fast lane subscribes (core NATS, no
// JetStream consumer) to each hot table's own commit subject, which the
// server delivers the moment the event is published, and asks the
// coalescer for an urgent refresh of the table.
//
// It only looks: it never acknowledges, counts or applies an event. The
// refresh it asks for is an ordinary one (the newest metadata, covering
// every commit of the table so far, in the table's one-round-at-a-time
// order); when the durable consumer later delivers the event, it finds
// it covered, acknowledges it and counts it, exactly once, as it does
// any event an earlier refresh covered. A look that is lost (the
// subscription's buffer full, a reconnect, a refresh that failed or ran
// before the catalog showed the commit) changes nothing: the durable
// copy is applied the ordinary way.
//
// Writers must publish on the commit subject's prefix and the table's
// qualified name (iceberg.commits.<namespace>.<table>, as the docs show);
// a table published elsewhere simply gets no fast lane.
type fastLane struct {
	c      *CommitConsumer
	nc     *nats.Conn
	hot    HotTables
	prefix string // the commit subject without its trailing ">"
	limit  int
	log    *slog.Logger

	mu     sync.Mutex
	subs   map[string]*nats.Subscription
	closed bool
}

// newFastLane returns the consumer's fast lane, or nil when the applier
// cannot tell hot tables, the commit subject does not end in ".>", or the
// lane's connection cannot be made (then events take the ordinary path).
func newFastLane(c *CommitConsumer, nc *nats.Conn, limit int) *fastLane {
	hot, ok := c.applier.(HotTables)
	if !ok || nc == nil || limit < 0 || !strings.HasSuffix(c.opts.Subject, ".>") {
		return nil
	}
	if limit == 0 {
		limit = DefaultFastLanes
	}
	lane, err := dialLane(nc, c.log)
	if err != nil {
		c.log.Warn("no fast lane for hot tables: their events wait behind the stream's backlog", "error", err)
		return nil
	}
	return &fastLane{c: c, nc: lane, hot: hot, prefix: strings.TrimSuffix(c.opts.Subject, ">"), limit: limit,
		log: c.log, subs: map[string]*nats.Subscription{}}
}

// dialLane opens the lane's own connection, with the consumer's options
// (servers, credentials, TLS, inbox prefix) but not its handlers. Its own,
// because the server writes a client's messages in order: on the
// consumer's connection a hot event would queue behind the backlog the
// server is writing to it, which is what the lane is for avoiding.
func dialLane(nc *nats.Conn, log *slog.Logger) (*nats.Conn, error) {
	o := nc.Opts
	o.Name += " fast lane"
	o.ClosedCB, o.DisconnectedCB, o.ConnectedCB, o.ReconnectedCB = nil, nil, nil, nil
	o.DiscoveredServersCB, o.LameDuckModeHandler = nil, nil
	o.DisconnectedErrCB, o.ReconnectErrCB = nil, nil
	o.AsyncErrorCB = func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		// A permission violation lands here: the table keeps the
		// ordinary path.
		log.Warn("fast lane subscription refused or lagging; the table's events take the ordinary path",
			"subject", subject, "error", err)
	}
	lane, err := o.Connect()
	if err != nil {
		return nil, fmt.Errorf("connect the fast lane: %w", err)
	}
	return lane, nil
}

// follow opens or closes the table's lane by what its state, just
// refreshed, says.
func (f *fastLane) follow(name string) {
	if f.open(name, f.want(name)) {
		f.confirm(1)
	}
}

// confirm waits for the server to know the lanes just opened: an event
// published after it returns takes them.
func (f *fastLane) confirm(opened int) {
	if err := f.nc.FlushTimeout(laneFlushTimeout); err != nil {
		f.log.Debug("fast lanes not confirmed by the server", "lanes", opened, "error", err)
	}
}

// want: the table is near a threshold and owned here.
func (f *fastLane) want(name string) bool {
	return f.hot.NearThreshold(name) && (f.c.own == nil || f.c.own.Owns(name))
}

// laneFlushTimeout bounds the round trip that confirms a new lane.
const laneFlushTimeout = 2 * time.Second

// open subscribes (hot) or unsubscribes the table's lane; it reports
// whether it subscribed.
func (f *fastLane) open(name string, hot bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	sub, on := f.subs[name]
	switch {
	case hot && !on && len(f.subs) < f.limit:
		subject := f.prefix + name
		if !literalSubject(subject) {
			return false
		}
		s, err := f.nc.Subscribe(subject, f.look)
		if err != nil {
			f.log.Debug("no fast lane for a hot table", "table", name, "subject", subject, "error", err)
			return false
		}
		f.subs[name] = s
		f.c.met.FastLanes.Set(float64(len(f.subs)))
		return true
	case !hot && on:
		_ = sub.Unsubscribe()
		delete(f.subs, name)
		f.c.met.FastLanes.Set(float64(len(f.subs)))
	}
	return false
}

// look asks for an urgent refresh of the event's table, unless its state
// covers the event already. It runs on the subscription's own goroutine,
// beside the durable consumer's.
func (f *fastLane) look(m *nats.Msg) {
	ev, err := events.DecodeCommit(m.Data)
	if err != nil || f.c.applier.CheckCommit(ev) != nil {
		return // the durable copy is dead-lettered or ignored
	}
	name := ev.QualifiedName()
	if f.c.own != nil && !f.c.own.Owns(name) {
		f.open(name, false) // the shard moved on: close the lane
		return
	}
	if f.c.applier.CommitCovered(ev) {
		f.c.met.FastLaneLooks.WithLabelValues("covered").Inc()
		return
	}
	f.c.met.FastLaneLooks.WithLabelValues("urgent").Inc()
	f.c.opts.CommitWatch.Observed(name)
	f.c.refreshes.addUrgent(ev.Name(), &work{
		refresh: true,
		covered: func() bool { return f.c.applier.CommitCovered(ev) },
		apply:   func(*table.Table, error) {},
	})
}

// lanes is how many tables have a lane now.
func (f *fastLane) lanes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// close ends every lane and the lanes' connection.
func (f *fastLane) close() {
	f.mu.Lock()
	f.closed = true
	clear(f.subs)
	f.c.met.FastLanes.Set(0)
	f.mu.Unlock()
	f.nc.Close()
}

// literalSubject: a subject of non-empty tokens without wildcards or
// spaces (a table name that cannot be one gets no lane).
func literalSubject(s string) bool {
	if strings.ContainsAny(s, " \t\r\n*>") {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return false
		}
	}
	return true
}
