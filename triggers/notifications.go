package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
)

// Defaults for storage notifications.
const (
	DefaultNotificationSubject = "minio.events"
	DefaultNotificationStream  = "REACTOR_NOTIFICATIONS"
	DefaultNotificationDurable = "reactor-notifications"
)

// NotificationSource is one publisher of bucket notifications: the subject
// it publishes on and how it encodes object keys. MinIO and AWS URL-encode
// keys; versitygw sends them raw, where a '+' is a real plus. The encoding
// is configured per source because it cannot be guessed from a key.
type NotificationSource struct {
	Subject     string
	KeyEncoding events.KeyEncoding
}

// NotificationOptions configure the notification consumer.
type NotificationOptions struct {
	Sources []NotificationSource
	// StreamReplicas: as CommitOptions.StreamReplicas, for the
	// notification stream.
	StreamReplicas int
	// Limits bound the notification stream (zero fields:
	// DefaultEventLimits).
	Limits            StreamLimits
	Stream            string
	Durable           string
	DeadLetterSubject string
	RetryBase         time.Duration
	RetryMax          time.Duration
	// NewTableGrace bounds how long a notification is held when its object
	// lies under a watched warehouse prefix but no table claims it (a table
	// just created, or still being created): it is redelivered, from
	// HoldBase doubling to HoldMax, and the index refreshed for it, until a
	// table claims it or this long after it was stored. Default
	// DefaultNewTableGrace.
	NewTableGrace     time.Duration
	HoldBase, HoldMax time.Duration
	// MaxAckPending and Refreshes: as in CommitOptions (share the commit
	// consumer's coalescer, so a table's commit events and metadata
	// notifications coalesce together).
	MaxAckPending      int
	Refreshes          *Coalescer
	RefreshConcurrency int
	// Ownership: as in CommitOptions.
	Ownership ownership.Tables
	// CommitWatch: as in CommitOptions; a new metadata file of a table is
	// a commit to it.
	CommitWatch *commitwatch.Watch
}

// DefaultNewTableGrace is how long a notification no table claims yet is
// held: far longer than a catalog takes to list a table it just created.
const DefaultNewTableGrace = 2 * time.Minute

func (o *NotificationOptions) defaults() {
	if len(o.Sources) == 0 {
		o.Sources = []NotificationSource{{Subject: DefaultNotificationSubject, KeyEncoding: events.KeyEncodingURL}}
	}
	for i := range o.Sources {
		if o.Sources[i].KeyEncoding == "" {
			o.Sources[i].KeyEncoding = events.KeyEncodingURL
		}
	}
	if o.Stream == "" {
		o.Stream = DefaultNotificationStream
	}
	if o.Durable == "" {
		o.Durable = DefaultNotificationDurable
	}
	if o.DeadLetterSubject == "" {
		o.DeadLetterSubject = DefaultDeadLetterSubject
	}
	o.RetryBase, o.RetryMax = retryDefaults(o.RetryBase, o.RetryMax)
	if o.NewTableGrace <= 0 {
		o.NewTableGrace = DefaultNewTableGrace
	}
	if o.HoldBase <= 0 {
		o.HoldBase = 250 * time.Millisecond
	}
	if o.HoldMax <= 0 {
		o.HoldMax = 5 * time.Second
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = DefaultMaxAckPending
	}
}

// ObjectApplier is what the notification consumer needs of the planner:
// routing an object to its table (without IO when a known table claims
// it), tracking data files, and one refresh for a table's new metadata
// files.
type ObjectApplier interface {
	Refresher
	RouteObject(ctx context.Context, ev events.ObjectEvent) (planner.ObjectRoute, planner.ObjectOutcome, error)
	RouteObjectFast(ev events.ObjectEvent) (planner.ObjectRoute, planner.ObjectOutcome, error, bool)
	ObjectCovered(r planner.ObjectRoute, ev events.ObjectEvent) bool
	TrackObject(r planner.ObjectRoute, ev events.ObjectEvent) planner.ObjectOutcome
	MetadataOutcome(r planner.ObjectRoute, ev events.ObjectEvent, tbl *table.Table, refreshErr error) (planner.ObjectOutcome, error)
}

// locateLane is the coalescer lane of records no known table claims: the
// planner may refresh its location index for them (catalog IO), so they
// wait there rather than on the delivery goroutine.
const locateLane = "\x00locate"

// NotificationConsumer consumes bucket notifications until stopped.
type NotificationConsumer struct {
	js      jetstream.JetStream
	opts    NotificationOptions
	applier ObjectApplier
	log     *slog.Logger
	met     *metrics.Metrics
	ctx     context.Context
	cc      jetstream.ConsumeContext

	retry     *redelivery
	hold      *holder
	refreshes *Coalescer
	ownsRefr  bool
	own       ownership.Tables
	fwd       *forwarder
	stopOnce  sync.Once
}

// StartNotifications ensures the notification stream and durable consumer
// exist and starts consuming. The dead-letter stream must exist
// (EnsureStreams).
func StartNotifications(ctx context.Context, js jetstream.JetStream, opts NotificationOptions, applier ObjectApplier,
	log *slog.Logger, met *metrics.Metrics) (*NotificationConsumer, error) {
	opts.defaults()
	subjects := make([]string, 0, len(opts.Sources))
	for _, s := range opts.Sources {
		if _, err := events.ParseKeyEncoding(string(s.KeyEncoding)); err != nil {
			return nil, fmt.Errorf("notification source %q: %w", s.Subject, err)
		}
		subjects = append(subjects, s.Subject)
	}
	if _, err := js.CreateOrUpdateStream(ctx, opts.Limits.orDefault(DefaultEventLimits).apply(jetstream.StreamConfig{
		Name:        opts.Stream,
		Description: "bucket notifications (MinIO, S3, versitygw) for reactor",
		Subjects:    subjects,
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    max(opts.StreamReplicas, 1),
	})); err != nil {
		return nil, fmt.Errorf("create stream %s for subjects %q: %w", opts.Stream, subjects, insufficientStorage(err))
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, opts.Stream, jetstream.ConsumerConfig{
		Durable:       opts.Durable,
		Description:   "reactor bucket-notification consumer",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       AckWait,
		MaxDeliver:    -1,
		MaxAckPending: opts.MaxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("create durable consumer %s on %s: %w", opts.Durable, opts.Stream, err)
	}
	c := &NotificationConsumer{js: js, opts: opts, applier: applier, log: log, met: met, ctx: ctx,
		retry:     &redelivery{source: "notification", what: "notification", base: opts.RetryBase, max: opts.RetryMax, log: log, met: met},
		hold:      &holder{base: opts.HoldBase, max: opts.HoldMax, grace: opts.NewTableGrace},
		refreshes: opts.Refreshes, own: opts.Ownership}
	if c.own != nil {
		c.fwd = newForwarder(js, log, met)
	}
	if c.refreshes == nil {
		c.refreshes = NewCoalescer(ctx, applier, opts.RefreshConcurrency, AckWait, log, met)
		c.ownsRefr = true
	}
	cc, err := cons.Consume(c.handle, jetstream.PullMaxMessages(pullBatch(opts.MaxAckPending)))
	if err != nil {
		if c.ownsRefr {
			c.refreshes.Close()
		}
		return nil, fmt.Errorf("consume %s: %w", opts.Stream, err)
	}
	c.cc = cc
	log.Info("consuming bucket notifications", "subjects", subjects, "stream", opts.Stream, "durable", opts.Durable)
	return c, nil
}

// Stop stops taking new messages and waits for the one in hand. It may be
// called more than once.
func (c *NotificationConsumer) Stop() {
	c.stopOnce.Do(func() {
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

func (c *NotificationConsumer) encodingFor(subject string) events.KeyEncoding {
	for _, s := range c.opts.Sources {
		if subjectMatches(s.Subject, subject) {
			return s.KeyEncoding
		}
	}
	return events.KeyEncodingURL
}

// handle runs on the consumer's delivery goroutine and never waits for IO:
// each record is applied at once when that needs none (a data file of a
// known table, a metadata file already applied, an object outside every
// table), or joins its table's queue (a new metadata file: the next
// refresh covers it) or the locating lane (no known table claims it). The
// message is acknowledged once every record is done.
func (c *NotificationConsumer) handle(msg jetstream.Msg) { c.accept(msg, -1) }

// accept takes a notification from the notification stream (shard < 0),
// or a copy from a shard stream this replica consumes: then only its
// records of that shard are applied (the others went to theirs).
func (c *NotificationConsumer) accept(msg jetstream.Msg, shard int) {
	n, err := events.DecodeNotification(msg.Data(), c.encodingFor(msg.Subject()))
	if err != nil {
		c.reject(msg, err)
		return
	}
	if n.Test {
		c.met.Events.WithLabelValues("notification", metrics.OutcomeTestEvent).Inc()
		c.log.Debug("storage test event skipped", "subject", msg.Subject())
		_ = msg.Ack()
		return
	}
	parts := &notificationParts{c: c, msg: msg, left: len(n.Events), shard: shard}
	if len(n.Events) == 0 {
		parts.settle()
		return
	}
	for _, ev := range n.Events {
		r, out, err, ok := c.applier.RouteObjectFast(ev)
		if !ok {
			c.refreshes.addLane(locateLane, runEach, &work{msg: msg, apply: func(*table.Table, error) {
				r, out, err := c.applier.RouteObject(c.ctx, ev)
				c.owned(parts, ev, r, out, err)
			}})
			continue
		}
		c.owned(parts, ev, r, out, err)
	}
}

// runEach is the locating lane's round: its records one after the other.
func runEach(_ context.Context, items []*work) {
	for _, it := range items {
		it.apply(nil, nil)
	}
}

// owned applies a record whose table this replica owns, forwards one of a
// table another replica owns, and passes over a copy's records of other
// shards.
func (c *NotificationConsumer) owned(parts *notificationParts, ev events.ObjectEvent, r planner.ObjectRoute,
	out planner.ObjectOutcome, err error) {
	if r.Table.IsZero() || c.own == nil {
		c.routed(parts, ev, r, out, err)
		return
	}
	shard := c.own.ShardOf(r.Table.String())
	switch {
	case parts.shard >= 0 && shard != parts.shard:
		parts.skip()
	case c.own.Owns(r.Table.String()):
		c.routed(parts, ev, r, out, err)
	case parts.shard >= 0:
		parts.done(ev, "", planner.ErrNotOwned)
	default:
		c.fwd.forward("notification", parts.msg, shard, func(err error) { parts.forwarded(ev, err) })
	}
}

// routed applies a record whose table is known (or whose outcome is).
func (c *NotificationConsumer) routed(parts *notificationParts, ev events.ObjectEvent, r planner.ObjectRoute,
	out planner.ObjectOutcome, err error) {
	switch {
	case r.Table.IsZero():
		parts.done(ev, out, err)
	case !r.Metadata:
		// After the table's pending refresh, if any: a data file the
		// refresh finds referenced is then confirmed, not tracked.
		c.refreshes.add(r.Table, &work{msg: parts.msg, apply: func(*table.Table, error) {
			if c.own != nil && !c.own.Owns(r.Table.String()) {
				parts.done(ev, "", planner.ErrNotOwned)
				return
			}
			parts.done(ev, c.applier.TrackObject(r, ev), nil)
		}})
	case c.applier.ObjectCovered(r, ev):
		c.met.EventsCoalesced.Inc()
		parts.done(ev, planner.ObjectCommit, nil)
	default:
		c.opts.CommitWatch.Observed(r.Table.String())
		c.refreshes.add(r.Table, &work{
			refresh: true,
			covered: func() bool { return c.applier.ObjectCovered(r, ev) },
			msg:     parts.msg,
			apply: func(tbl *table.Table, refreshErr error) {
				if tbl == nil && refreshErr == nil { // covered: no refresh was needed
					parts.done(ev, planner.ObjectCommit, nil)
					return
				}
				out, err := c.applier.MetadataOutcome(r, ev, tbl, refreshErr)
				parts.done(ev, out, err)
			},
		})
	}
}

// notificationParts settles one notification message once each of its
// records is done: redelivered later if one met a transient fault, held
// if one waits for a table or a commit the catalog does not show yet,
// acknowledged otherwise (what it applied re-applies harmlessly when it
// comes back).
type notificationParts struct {
	c     *NotificationConsumer
	msg   jetstream.Msg
	shard int // the shard stream it came from; -1: the notification stream

	mu           sync.Mutex
	left         int
	transient    error
	transientLoc string
	held         error
}

// skip completes a record that is another shard's (in a copy).
func (m *notificationParts) skip() { m.done(events.ObjectEvent{}, "", errSkipped) }

// forwarded completes a record sent on to its owner.
func (m *notificationParts) forwarded(ev events.ObjectEvent, err error) {
	if err == nil {
		err = errSkipped
	}
	m.done(ev, "", err)
}

// errSkipped: a record done here without an outcome of its own.
var errSkipped = errors.New("record not applied here")

func (m *notificationParts) done(ev events.ObjectEvent, out planner.ObjectOutcome, err error) {
	c := m.c
	switch {
	case err == nil:
		c.met.Objects.WithLabelValues(string(out)).Inc()
	case errors.Is(err, planner.ErrOutsideTables):
		c.met.Objects.WithLabelValues(string(planner.ObjectOutside)).Inc()
		c.log.Debug("object outside every watched table", "location", ev.Location())
	}
	m.mu.Lock()
	switch {
	case err == nil, errors.Is(err, planner.ErrOutsideTables), errors.Is(err, errSkipped):
	case errors.Is(err, planner.ErrUnclaimed), errors.Is(err, planner.ErrNotYetVisible):
		// Possibly a table the catalog does not list yet, or a commit it
		// does not show yet: hold the whole message.
		if m.held == nil || errors.Is(err, planner.ErrUnclaimed) {
			m.held = err
		}
	default:
		if m.transient == nil {
			m.transient, m.transientLoc = err, ev.Location()
		}
	}
	m.left--
	last := m.left == 0
	m.mu.Unlock()
	if last {
		m.settle()
	}
}

func (m *notificationParts) settle() {
	c, msg := m.c, m.msg
	if errors.Is(m.transient, planner.ErrNotOwned) {
		_ = msg.NakWithDelay(notOwnedDelay) // for the table's owner
		return
	}
	if m.transient != nil {
		c.retry.later(c.ctx, msg, m.transient, "location", m.transientLoc)
		return
	}
	if err := m.held; err != nil {
		held, age, nakErr := c.hold.again(msg)
		if held == holdRedelivered {
			c.met.Objects.WithLabelValues(string(planner.ObjectHeld)).Inc()
			c.log.Debug("object claimed by no table yet; held for redelivery", "error", err, "age", age.Round(time.Millisecond))
			if nakErr != nil {
				c.log.Warn("nak failed; the notification will be redelivered after the ack wait", "error", nakErr)
			}
			return
		}
		dropped := planner.ObjectOutside
		if errors.Is(err, planner.ErrNotYetVisible) {
			dropped = planner.ObjectIgnored // a failed commit's metadata file
		}
		c.met.Objects.WithLabelValues(string(dropped)).Inc()
		if held == holdFull {
			c.log.Warn("too many notifications held waiting for the catalog; dropped", "error", err, "held", maxHeld)
		} else {
			c.log.Info("gave up waiting for the catalog to show the object's table or commit; dropped",
				"error", err, "grace", c.opts.NewTableGrace)
		}
	}
	c.retry.recovered()
	c.hold.release(msg)
	c.met.Events.WithLabelValues("notification", metrics.OutcomeApplied).Inc()
	_ = msg.Ack()
}

// Stream is the notification stream the consumer created.
func (c *NotificationConsumer) Stream() string { return c.opts.Stream }

func (c *NotificationConsumer) reject(msg jetstream.Msg, cause error) {
	cause = deadLetterCause(cause)
	err := deadLetter(c.ctx, c.js, c.opts.DeadLetterSubject, msg, events.ReasonMalformed, cause)
	if err != nil {
		if refusedByLimit(err) {
			c.met.StreamPublishRefused.WithLabelValues(DefaultDeadLetterStream).Inc()
		}
		c.met.Events.WithLabelValues("notification", metrics.OutcomeDeadLetterErr).Inc()
		c.log.Error("could not dead-letter a notification; it will be redelivered", "subject", msg.Subject(),
			"cause", cause, "error", excerpt.Error(err))
		_ = msg.NakWithDelay(c.opts.RetryMax)
		return
	}
	c.met.Events.WithLabelValues("notification", metrics.OutcomeMalformed).Inc()
	c.log.Warn("notification dead-lettered", "subject", msg.Subject(), "reason", events.ReasonMalformed,
		"error", cause, "dead_letter_subject", c.opts.DeadLetterSubject)
	_ = msg.Ack()
}

// subjectMatches reports whether subject matches a NATS subject pattern
// ('*' one token, '>' the rest).
func subjectMatches(pattern, subject string) bool {
	pt := strings.Split(pattern, ".")
	st := strings.Split(subject, ".")
	for i, p := range pt {
		if p == ">" {
			return len(st) > i
		}
		if i >= len(st) || (p != "*" && p != st[i]) {
			return false
		}
	}
	return len(pt) == len(st)
}
