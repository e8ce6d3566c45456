package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/excerpt"
	"github.com/icereactor/reactor/metrics"
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
	Sources           []NotificationSource
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
}

// ObjectApplier applies object events (the planner).
type ObjectApplier interface {
	ApplyObject(ctx context.Context, ev events.ObjectEvent) (planner.ObjectOutcome, error)
}

// NotificationConsumer consumes bucket notifications until stopped.
type NotificationConsumer struct {
	js      jetstream.JetStream
	opts    NotificationOptions
	applier ObjectApplier
	log     *slog.Logger
	met     *metrics.Metrics
	ctx     context.Context
	cc      jetstream.ConsumeContext

	retry    *redelivery
	hold     *holder
	stopOnce sync.Once
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
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        opts.Stream,
		Description: "bucket notifications (MinIO, S3, versitygw) for reactor",
		Subjects:    subjects,
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return nil, fmt.Errorf("create stream %s for subjects %q: %w", opts.Stream, subjects, err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, opts.Stream, jetstream.ConsumerConfig{
		Durable:       opts.Durable,
		Description:   "reactor bucket-notification consumer",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       2 * time.Minute,
		MaxDeliver:    -1,
		MaxAckPending: 1024,
	})
	if err != nil {
		return nil, fmt.Errorf("create durable consumer %s on %s: %w", opts.Durable, opts.Stream, err)
	}
	c := &NotificationConsumer{js: js, opts: opts, applier: applier, log: log, met: met, ctx: ctx,
		retry: &redelivery{source: "notification", what: "notification", base: opts.RetryBase, max: opts.RetryMax, log: log, met: met},
		hold:  &holder{base: opts.HoldBase, max: opts.HoldMax, grace: opts.NewTableGrace}}
	cc, err := cons.Consume(c.handle)
	if err != nil {
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

func (c *NotificationConsumer) handle(msg jetstream.Msg) {
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
	for _, ev := range n.Events {
		outcome, err := c.applier.ApplyObject(c.ctx, ev)
		switch {
		case err == nil:
			c.met.Objects.WithLabelValues(string(outcome)).Inc()
		case errors.Is(err, planner.ErrOutsideTables):
			c.met.Objects.WithLabelValues(string(planner.ObjectOutside)).Inc()
			c.log.Debug("object outside every watched table", "location", ev.Location())
		case errors.Is(err, planner.ErrUnclaimed), errors.Is(err, planner.ErrNotYetVisible):
			// Possibly a table the catalog does not list yet, or a commit
			// it does not show yet: hold the whole message (what it
			// applied so far re-applies harmlessly).
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
		default:
			// Transient: redeliver the whole message later. The events
			// applied so far re-apply harmlessly (tracking and commits are
			// idempotent).
			c.retry.later(c.ctx, msg, err, "location", ev.Location())
			return
		}
	}
	c.retry.recovered()
	c.hold.release(msg)
	c.met.Events.WithLabelValues("notification", metrics.OutcomeApplied).Inc()
	_ = msg.Ack()
}

func (c *NotificationConsumer) reject(msg jetstream.Msg, cause error) {
	cause = deadLetterCause(cause)
	err := deadLetter(c.ctx, c.js, c.opts.DeadLetterSubject, msg, events.ReasonMalformed, cause)
	if err != nil {
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
