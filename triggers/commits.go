package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/commitwatch"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/excerpt"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/sizelimit"
)

// Defaults for CommitOptions.
const (
	DefaultCommitSubject     = "iceberg.commits.>"
	DefaultCommitStream      = "REACTOR_COMMITS"
	DefaultDurable           = "reactor"
	DefaultDeadLetterSubject = "reactor.deadletter"
	DefaultDeadLetterStream  = "REACTOR_DEADLETTER"
)

// CommitOptions configure the commit-event consumer.
type CommitOptions struct {
	Subject           string
	Stream            string
	Durable           string
	DeadLetterSubject string
	DeadLetterStream  string
	// RetryBase and RetryMax bound the redelivery delay of events that hit
	// a transient fault: base * 2^(delivery-1), capped at max.
	RetryBase time.Duration
	RetryMax  time.Duration
	// MaxAckPending bounds the events delivered and not yet acknowledged
	// (DefaultMaxAckPending): the events of a table that arrive while its
	// refresh runs wait, unacknowledged, to be covered by the next one, so
	// the window must hold a burst.
	MaxAckPending int
	// Refreshes is the coalescer events go through; nil: the consumer
	// starts its own (RefreshConcurrency workers) and closes it on Stop.
	Refreshes          *Coalescer
	RefreshConcurrency int
	// Ownership, when set, says which tables this replica owns (package
	// lease): their events are applied here; the others' are forwarded to
	// their shard stream (see ShardSubjectPrefix), which the owning
	// replica consumes.
	Ownership ownership.Tables
	// CommitWatch, when set, hears the qualified name of a table as soon
	// as an event names a commit to it that its state has not applied,
	// before the table is loaded: the moment a job's commit that lost a
	// race should retry (the executor waits on the same Watch).
	CommitWatch *commitwatch.Watch
	// FastLanes bounds the hot tables given a fast lane (see fastLane):
	// 0 is DefaultFastLanes, negative turns the fast lane off.
	FastLanes int
	// StreamReplicas is how many copies a NATS cluster keeps of the
	// commit, dead-letter and shard streams (default 1; 3 on a
	// three-node cluster, so losing a node loses no event). A single
	// server refuses more than 1.
	StreamReplicas int
	// Limits bound the commit and shard streams (DefaultEventLimits),
	// DeadLetterLimits the dead-letter stream (DefaultDeadLetterLimits).
	Limits, DeadLetterLimits StreamLimits
	// UnknownTableTTL is how long a table name the catalog did not know
	// is answered from memory, without asking the catalog again
	// (DefaultUnknownTableTTL; negative: always ask).
	UnknownTableTTL time.Duration
}

// DefaultMaxAckPending is the consumers' window of unacknowledged events:
// about 1 KB each while waiting (the message and its work item), so 20 MB
// at most.
const DefaultMaxAckPending = 20_000

// AckWait is how long JetStream waits for an event's acknowledgement
// before redelivering it. Events waiting for a slow refresh are kept in
// progress meanwhile (see Coalescer).
const AckWait = 2 * time.Minute

func (o *CommitOptions) defaults() {
	if o.Subject == "" {
		o.Subject = DefaultCommitSubject
	}
	if o.Stream == "" {
		o.Stream = DefaultCommitStream
	}
	if o.Durable == "" {
		o.Durable = DefaultDurable
	}
	if o.DeadLetterSubject == "" {
		o.DeadLetterSubject = DefaultDeadLetterSubject
	}
	if o.DeadLetterStream == "" {
		o.DeadLetterStream = DefaultDeadLetterStream
	}
	o.RetryBase, o.RetryMax = retryDefaults(o.RetryBase, o.RetryMax)
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = DefaultMaxAckPending
	}
	if o.StreamReplicas <= 0 {
		o.StreamReplicas = 1
	}
	o.Limits = o.Limits.orDefault(DefaultEventLimits)
	o.DeadLetterLimits = o.DeadLetterLimits.orDefault(DefaultDeadLetterLimits)
	if o.UnknownTableTTL == 0 {
		o.UnknownTableTTL = DefaultUnknownTableTTL
	}
}

// Applier is what the commit consumer needs of the planner: checks that
// need no IO, and one refresh for a table's waiting events.
type Applier interface {
	Refresher
	// CheckCommit rejects events this reactor must not apply
	// (planner.ErrOtherCatalog, planner.ErrNotWatched).
	CheckCommit(ev events.CommitEvent) error
	// CommitCovered: the state already reflects the event's commit.
	CommitCovered(ev events.CommitEvent) bool
}

// CommitConsumer consumes commit events until stopped.
type CommitConsumer struct {
	js      jetstream.JetStream
	opts    CommitOptions
	applier Applier
	log     *slog.Logger
	met     *metrics.Metrics
	ctx     context.Context
	cc      jetstream.ConsumeContext

	retry     *redelivery
	refreshes *Coalescer
	ownsRefr  bool
	own       ownership.Tables
	fwd       *forwarder
	lane      *fastLane // nil: none (see newFastLane)
	stopOnce  sync.Once
	// unknown are the table names the catalog did not know lately.
	unknown *unknownTables
	// sweep: how far in the commit stream each table's last refresh
	// covers (sweep.go).
	sweep *sweep
}

// EnsureStreams creates (or updates) the commit stream and the dead-letter
// stream. Work-queue retention on the commit stream: an event is kept until
// reactor acknowledges it, and no longer.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, opts CommitOptions) error {
	opts.defaults()
	if _, err := js.CreateOrUpdateStream(ctx, opts.Limits.apply(jetstream.StreamConfig{
		Name:        opts.Stream,
		Description: "Iceberg commit events for reactor",
		Subjects:    []string{opts.Subject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    opts.StreamReplicas,
	})); err != nil {
		return fmt.Errorf("create stream %s for subject %q: %w", opts.Stream, opts.Subject, insufficientStorage(err))
	}
	if _, err := js.CreateOrUpdateStream(ctx, opts.DeadLetterLimits.apply(jetstream.StreamConfig{
		Name:        opts.DeadLetterStream,
		Description: "events reactor could not apply, with the reason",
		Subjects:    []string{opts.DeadLetterSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    opts.StreamReplicas,
		// Longer than the consumers' AckWait: a message whose
		// acknowledgement was lost comes back after it, and its dead
		// letter (same message id) must then be recognised.
		Duplicates: 10 * time.Minute,
	})); err != nil {
		return fmt.Errorf("create dead-letter stream %s for subject %q: %w", opts.DeadLetterStream, opts.DeadLetterSubject, insufficientStorage(err))
	}
	return nil
}

// StartCommits ensures the streams and the durable consumer exist and starts
// consuming. ctx bounds the whole consumer's life.
func StartCommits(ctx context.Context, js jetstream.JetStream, opts CommitOptions, applier Applier,
	log *slog.Logger, met *metrics.Metrics) (*CommitConsumer, error) {
	opts.defaults()
	if err := EnsureStreams(ctx, js, opts); err != nil {
		return nil, err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, opts.Stream, jetstream.ConsumerConfig{
		Durable:       opts.Durable,
		Description:   "reactor commit-event consumer",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       AckWait,
		MaxDeliver:    -1, // a transient fault must never drop an event
		FilterSubject: opts.Subject,
		MaxAckPending: opts.MaxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("create durable consumer %s on %s: %w", opts.Durable, opts.Stream, err)
	}
	c := &CommitConsumer{js: js, opts: opts, applier: applier, log: log, met: met, ctx: ctx,
		retry:     &redelivery{source: "commit", what: "event", base: opts.RetryBase, max: opts.RetryMax, log: log, met: met},
		refreshes: opts.Refreshes, own: opts.Ownership, unknown: newUnknownTables(opts.UnknownTableTTL), sweep: newSweep(opts.Stream)}
	if c.own != nil {
		c.fwd = newForwarder(js, log, met)
	}
	if c.refreshes == nil {
		c.refreshes = NewCoalescer(ctx, applier, opts.RefreshConcurrency, AckWait, log, met)
		c.ownsRefr = true
	}
	if c.lane = newFastLane(c, js.Conn(), opts.FastLanes); c.lane != nil {
		c.refreshes.onRefreshed(c.lane.follow)
	}
	c.refreshes.onRoundStart(c.sweep.roundStarted)
	cc, err := cons.Consume(c.handle, jetstream.PullMaxMessages(pullBatch(opts.MaxAckPending)))
	if err != nil {
		c.stopLane()
		if c.ownsRefr {
			c.refreshes.Close()
		}
		return nil, fmt.Errorf("consume %s: %w", opts.Stream, err)
	}
	c.cc = cc
	log.Info("consuming commit events", "subject", opts.Subject, "stream", opts.Stream, "durable", opts.Durable,
		"dead_letter_subject", opts.DeadLetterSubject)
	return c, nil
}

// Stop stops taking new messages and waits for the ones in hand; events
// still waiting for a refresh go back to JetStream (if the consumer owns
// its coalescer; else the coalescer's Close does it). It may be called
// more than once.
func (c *CommitConsumer) Stop() {
	c.stopOnce.Do(func() {
		c.stopLane()
		c.cc.Drain()
		<-c.cc.Closed()
		if c.ownsRefr {
			c.refreshes.Close()
		}
		if c.fwd != nil {
			c.fwd.close()
		}
	})
}

// stopLane closes the fast lane: the durable consumer alone delivers
// from here on.
func (c *CommitConsumer) stopLane() {
	c.refreshes.onRoundStart(nil)
	if c.lane != nil {
		c.refreshes.onRefreshed(nil)
		c.lane.close()
	}
}

// Streams are the streams the consumer created: the commit stream and
// the dead-letter stream.
func (c *CommitConsumer) Streams() []string { return []string{c.opts.Stream, c.opts.DeadLetterStream} }

// FastLanes is how many hot tables have a fast lane now.
func (c *CommitConsumer) FastLanes() int {
	if c.lane == nil {
		return 0
	}
	return c.lane.lanes()
}

// FollowHot opens a fast lane for each of the named tables that is near
// a threshold and owned here, as a refresh of it would. The worker calls
// it after discovery: a table brought in at start or at a lease handover,
// not by an event, is hot from its first commit on, and without this its
// first event after the restart would wait behind the backlog.
func (c *CommitConsumer) FollowHot(tables []string) {
	if c.lane == nil {
		return
	}
	opened := 0
	for _, name := range tables {
		if c.lane.want(name) && c.lane.open(name, true) {
			opened++
		}
	}
	if opened > 0 {
		c.lane.confirm(opened)
	}
}

// pullBatch is how many messages a pull asks for: enough to keep the
// window full without one pull holding all of it, and no more than
// maxPull.
func pullBatch(maxAckPending int) int {
	return min(max(maxAckPending/4, 100), maxPull)
}

// maxPull caps a pull at 500 messages. The server keeps writing an
// outstanding pull and the client keeps parsing it while the handler
// yields to a hot table's urgent refresh, so a large pull is CPU taken
// from that refresh: behind 10,000 queued events a hot table reacted in
// 1.6-2.0x its unloaded time (mean) with pulls of 2,000 and 1.2-1.4x with
// 500, at about 1.3x the CPU per event of draining such a burst
// (BENCHMARKS 15).
const maxPull = 500

// handle runs on the consumer's delivery goroutine, so it never waits for
// IO: an event the state already covers is acknowledged at once, any other
// joins its table's queue for the next refresh (see Coalescer).
func (c *CommitConsumer) handle(msg jetstream.Msg) { c.accept(msg, -1) }

// accept takes an event from the commit stream (shard < 0) or from a shard
// stream this replica consumes.
func (c *CommitConsumer) accept(msg jetstream.Msg, shard int) {
	c.refreshes.yieldToUrgent()
	c.sweep.delivered(msg)
	ev, err := events.DecodeCommit(msg.Data())
	if err != nil {
		c.reject(msg, events.ReasonMalformed, metrics.OutcomeMalformed, err)
		return
	}
	if err := c.applier.CheckCommit(ev); err != nil {
		c.finish(msg, ev, err)
		return
	}
	if name := ev.QualifiedName(); c.own != nil && !c.own.Owns(name) {
		if shard >= 0 {
			// The shard moved on while this was delivered: back to its
			// durable consumer, which the new owner consumes.
			c.finish(msg, ev, planner.ErrNotOwned)
			return
		}
		c.fwd.forward("commit", msg, c.own.ShardOf(name), func(err error) {
			if err != nil {
				c.retry.later(c.ctx, msg, err, "table", name)
				return
			}
			_ = msg.Ack()
		})
		return
	}
	name := ev.QualifiedName()
	if err, ok := c.unknown.lookup(name); ok {
		// The catalog said lately that it does not know the table: a
		// storm of events for names that do not exist costs no load.
		c.met.UnknownTablesRemembered.Inc()
		c.finish(msg, ev, err)
		return
	}
	if c.applier.CommitCovered(ev) {
		c.met.EventsCoalesced.Inc()
		c.finish(msg, ev, nil)
		return
	}
	if seq, ok := c.sweep.position(msg); ok && c.sweep.swept(name, seq) {
		// Stored before a refresh of its table that succeeded started:
		// that load saw the commit, or the catalog never showed it.
		c.met.EventsCoalesced.Inc()
		c.finish(msg, ev, nil)
		return
	}
	c.opts.CommitWatch.Observed(name)
	c.refreshes.add(ev.Name(), &work{
		refresh: true,
		covered: func() bool { return c.applier.CommitCovered(ev) },
		apply: func(_ *table.Table, err error) {
			if errors.Is(err, planner.ErrUnknownTable) {
				c.unknown.remember(name, err)
			}
			c.finish(msg, ev, err)
		},
		msg: msg,
	})
}

// finish acknowledges, dead-letters or redelivers an event by the outcome
// of the refresh that covered it.
func (c *CommitConsumer) finish(msg jetstream.Msg, ev events.CommitEvent, err error) {
	switch {
	case err == nil:
		if ackErr := msg.Ack(); ackErr != nil {
			// Redelivery will apply it again, which is harmless.
			c.log.Warn("ack failed; the event will be redelivered and re-applied idempotently",
				"table", ev.QualifiedName(), "snapshot_id", ev.SnapshotID, "error", ackErr)
		}
		c.retry.recovered("table", ev.QualifiedName())
		c.met.Events.WithLabelValues("commit", metrics.OutcomeApplied).Inc()
	case errors.Is(err, planner.ErrOtherCatalog):
		c.met.Events.WithLabelValues("commit", metrics.OutcomeOtherCatalog).Inc()
		c.log.Debug("event for another catalog ignored", "table", ev.QualifiedName(), "catalog", ev.Catalog)
		_ = msg.Ack()
	case errors.Is(err, planner.ErrUnknownTable):
		c.reject(msg, events.ReasonUnknownTable, metrics.OutcomeUnknownTable, err)
	case errors.Is(err, planner.ErrNotWatched):
		c.reject(msg, events.ReasonNamespaceNotWatched, metrics.OutcomeNotWatched, err)
	case errors.Is(err, planner.ErrNotOwned):
		_ = msg.NakWithDelay(notOwnedDelay)
	default:
		var tooLarge *sizelimit.Error
		if errors.As(err, &tooLarge) {
			// The table cannot be read until the file goes or the limit
			// is raised: retried like any refresh that failed.
			c.met.SizeLimitRefusals.WithLabelValues(string(tooLarge.Kind)).Inc()
		}
		c.retry.later(c.ctx, msg, err, "table", ev.QualifiedName(), "snapshot_id", ev.SnapshotID)
	}
}

// reject dead-letters a message with the reason and acknowledges it. If the
// dead letter cannot be stored the message is not acknowledged: it comes
// back rather than being lost.
func (c *CommitConsumer) reject(msg jetstream.Msg, reason, outcome string, cause error) {
	cause = deadLetterCause(cause)
	err := deadLetter(c.ctx, c.js, c.opts.DeadLetterSubject, msg, reason, cause)
	if err != nil {
		if refusedByLimit(err) {
			c.met.StreamPublishRefused.WithLabelValues(c.opts.DeadLetterStream).Inc()
		}
		c.met.Events.WithLabelValues("commit", metrics.OutcomeDeadLetterErr).Inc()
		c.log.Error("could not dead-letter an event; it will be redelivered", "subject", msg.Subject(),
			"reason", reason, "cause", cause, "error", excerpt.Error(err))
		_ = msg.NakWithDelay(c.opts.RetryMax)
		return
	}
	c.met.Events.WithLabelValues("commit", outcome).Inc()
	c.log.Warn("event dead-lettered", "subject", msg.Subject(), "reason", reason, "error", cause,
		"dead_letter_subject", c.opts.DeadLetterSubject)
	_ = msg.Ack()
}
