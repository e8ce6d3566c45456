package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/icereactor/reactor/metrics"
)

// Shard streams: every replica consumes the shared commit and notification
// streams (whoever gets an event), and an event of a table another replica
// owns is forwarded, byte for byte, to that table's shard subject; the
// shard's durable consumer is consumed only by the shard's owner, and
// moves with the lease (a new owner resumes it where the old one stopped).
// The original is acknowledged once JetStream stored the copy, so the
// crash guarantee holds across the hop.
const (
	DefaultShardStream = "REACTOR_SHARDS"
	ShardSubjectPrefix = "reactor.shard."
	shardDurablePrefix = "reactor-shard-"

	headerSource = "Reactor-Source" // commit | notification
	headerOrigin = "Reactor-Origin-Subject"
)

// EnsureShardStream creates (or updates) the shard stream with replicas
// copies on a NATS cluster (at least 1), within limits (zero fields:
// DefaultEventLimits).
func EnsureShardStream(ctx context.Context, js jetstream.JetStream, replicas int, limits StreamLimits) error {
	if _, err := js.CreateOrUpdateStream(ctx, limits.orDefault(DefaultEventLimits).apply(jetstream.StreamConfig{
		Name:        DefaultShardStream,
		Description: "events forwarded to the replica owning their table, by shard",
		Subjects:    []string{ShardSubjectPrefix + "*"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
		// A copy sent again after its original was redelivered is
		// recognised by its message id.
		Duplicates: 10 * time.Minute,
	})); err != nil {
		return fmt.Errorf("create stream %s: %w", DefaultShardStream, insufficientStorage(err))
	}
	return nil
}

// forwarder publishes copies asynchronously and completes each once
// JetStream stored it (in order, on one goroutine).
type forwarder struct {
	js  jetstream.JetStream
	log *slog.Logger
	met *metrics.Metrics

	pending chan forwarded
	wg      sync.WaitGroup
	once    sync.Once
}

type forwarded struct {
	ack  jetstream.PubAckFuture
	err  error
	done func(error)
}

func newForwarder(js jetstream.JetStream, log *slog.Logger, met *metrics.Metrics) *forwarder {
	f := &forwarder{js: js, log: log, met: met, pending: make(chan forwarded, 4096)}
	f.wg.Add(1)
	go f.complete()
	return f
}

// forward sends msg's copy to shard's subject; done hears whether it was
// stored. The copy's id is the original's stream, sequence, store time and
// shard, so a copy sent again (the original redelivered) is stored once.
// The store time is what tells two events apart when their stream was
// deleted and created again: its sequence numbers start over, and with the
// sequence alone a new event inside the duplicate window was taken for an
// old one's copy, acknowledged and lost.
func (f *forwarder) forward(source string, msg jetstream.Msg, shard int, done func(error)) {
	out := &nats.Msg{Subject: ShardSubjectPrefix + strconv.Itoa(shard), Header: nats.Header{}, Data: msg.Data()}
	out.Header.Set(headerSource, source)
	out.Header.Set(headerOrigin, originSubject(msg))
	if md, err := msg.Metadata(); err == nil {
		out.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s.%d.%d.%d", md.Stream, md.Sequence.Stream, md.Timestamp.UnixNano(), shard))
	}
	ack, err := f.js.PublishMsgAsync(out)
	f.pending <- forwarded{ack: ack, err: err, done: done}
	f.met.EventsForwarded.WithLabelValues(source).Inc()
}

func (f *forwarder) complete() {
	defer f.wg.Done()
	for p := range f.pending {
		err := p.err
		if err == nil {
			select {
			case <-p.ack.Ok():
			case err = <-p.ack.Err():
			case <-time.After(time.Minute):
				err = errors.New("no acknowledgement from JetStream within a minute")
			}
		}
		if err != nil {
			if refusedByLimit(err) {
				f.met.StreamPublishRefused.WithLabelValues(DefaultShardStream).Inc()
			}
			err = fmt.Errorf("forward to the table's owner: %w", err)
		}
		p.done(err)
	}
}

func (f *forwarder) close() {
	f.once.Do(func() {
		close(f.pending)
		f.wg.Wait()
	})
}

// originSubject is the subject an event was first published on.
func originSubject(msg jetstream.Msg) string {
	if h := msg.Headers(); h != nil {
		if s := h.Get(headerOrigin); s != "" {
			return s
		}
	}
	return msg.Subject()
}

// fromOrigin presents a forwarded copy with its original subject (dead
// letters and key encodings go by it).
type fromOrigin struct {
	jetstream.Msg
	subject string
}

func (m fromOrigin) Subject() string { return m.subject }

// ShardConsumers consume the shard streams of the shards this replica
// owns, each with its shard's durable consumer.
type ShardConsumers struct {
	ctx     context.Context
	js      jetstream.JetStream
	commits *CommitConsumer
	objects *NotificationConsumer
	log     *slog.Logger

	mu      sync.Mutex
	running map[int]jetstream.ConsumeContext
}

// StartShardConsumers prepares the shard consumers; Start and Stop follow
// the leases. objects may be nil (notifications disabled).
func StartShardConsumers(ctx context.Context, js jetstream.JetStream, commits *CommitConsumer, objects *NotificationConsumer,
	log *slog.Logger) (*ShardConsumers, error) {
	if err := EnsureShardStream(ctx, js, commits.opts.StreamReplicas, commits.opts.Limits); err != nil {
		return nil, err
	}
	return &ShardConsumers{ctx: ctx, js: js, commits: commits, objects: objects, log: log, running: map[int]jetstream.ConsumeContext{}}, nil
}

// Start consumes the shards' streams (those not consumed yet), creating
// a few consumers at once: each is a JetStream API round trip, and a
// replica taking a share of 20 shards would otherwise keep its lease
// handler busy for 20 of them, holding up the next handover. The first
// error is returned once the others are done; the shards started are
// running either way.
func (s *ShardConsumers) Start(ctx context.Context, shards []int) error {
	var g errgroup.Group
	g.SetLimit(parallelConsumerStarts)
	for _, shard := range shards {
		s.mu.Lock()
		_, on := s.running[shard]
		s.mu.Unlock()
		if on {
			continue
		}
		g.Go(func() error { return s.start(ctx, shard) })
	}
	return g.Wait()
}

// parallelConsumerStarts bounds the shard consumers created at once.
const parallelConsumerStarts = 8

func (s *ShardConsumers) start(ctx context.Context, shard int) error {
	cons, err := s.js.CreateOrUpdateConsumer(ctx, DefaultShardStream, jetstream.ConsumerConfig{
		Durable:       shardDurablePrefix + strconv.Itoa(shard),
		Description:   "events of one shard's tables, for the replica holding its lease",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       AckWait,
		MaxDeliver:    -1,
		FilterSubject: ShardSubjectPrefix + strconv.Itoa(shard),
		MaxAckPending: 2000,
	})
	if err != nil {
		return fmt.Errorf("shard %d consumer: %w", shard, err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) { s.handle(msg, shard) }, jetstream.PullMaxMessages(500))
	if err != nil {
		return fmt.Errorf("consume shard %d: %w", shard, err)
	}
	s.mu.Lock()
	if _, on := s.running[shard]; on {
		// Another Start (a retry) got there first: one consumer per shard.
		s.mu.Unlock()
		cc.Stop()
		<-cc.Closed()
		return nil
	}
	s.running[shard] = cc
	s.mu.Unlock()
	return nil
}

// Stop stops consuming the shards (what is delivered and not yet applied
// goes back to their durable consumers for the next owner).
func (s *ShardConsumers) Stop(shards []int) {
	var ccs []jetstream.ConsumeContext
	s.mu.Lock()
	for _, shard := range shards {
		if cc, ok := s.running[shard]; ok {
			ccs = append(ccs, cc)
			delete(s.running, shard)
		}
	}
	s.mu.Unlock()
	// All stopped before any is waited for: each close takes its pull's
	// round trip, and a rebalance stops a replica's whole share at once.
	for _, cc := range ccs {
		cc.Stop()
	}
	for _, cc := range ccs {
		<-cc.Closed()
	}
}

// StopAll stops every shard consumer.
func (s *ShardConsumers) StopAll() {
	s.mu.Lock()
	shards := make([]int, 0, len(s.running))
	for shard := range s.running {
		shards = append(shards, shard)
	}
	s.mu.Unlock()
	s.Stop(shards)
}

func (s *ShardConsumers) handle(msg jetstream.Msg, shard int) {
	orig := fromOrigin{Msg: msg, subject: originSubject(msg)}
	switch msg.Headers().Get(headerSource) {
	case "commit":
		s.commits.accept(orig, shard)
	case "notification":
		if s.objects != nil {
			s.objects.accept(orig, shard)
			return
		}
		_ = msg.Ack() // notifications are off here: nothing to apply
	default:
		s.log.Warn("shard stream message without a known source; dropped", "subject", msg.Subject(),
			"source", excerptHeader(msg.Headers().Get(headerSource)))
		_ = msg.Ack()
	}
}

func excerptHeader(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// notOwnedDelay is how soon an event this replica does not own (any more)
// comes back: its new owner is usually settled by then.
const notOwnedDelay = 500 * time.Millisecond
