package triggers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/metrics"
)

// redelivery handles messages that met a transient fault: they are
// negatively acknowledged with an exponential delay (base * 2^(delivery-1),
// capped), never dropped, and the log says once — and every tenth delivery —
// that reactor is waiting, then once that it recovered.
type redelivery struct {
	source    string // the source label of reactor_events_total
	what      string // "event" or "notification", for the log
	base, max time.Duration
	log       *slog.Logger
	met       *metrics.Metrics

	mu       sync.Mutex
	waiting  bool
	warnedAt time.Time
}

// redeliveryWarnEvery bounds the "waiting for the catalog" warnings after
// the first: many events wait at once (every table's), each counting its
// own deliveries.
const redeliveryWarnEvery = 30 * time.Second

func (r *redelivery) later(ctx context.Context, msg jetstream.Msg, cause error, attrs ...any) {
	delivered := uint64(1)
	if md, err := msg.Metadata(); err == nil && md.NumDelivered > 0 {
		delivered = md.NumDelivered
	}
	delay := holdDelay(delivered, r.base, r.max)
	r.met.Events.WithLabelValues(r.source, metrics.OutcomeRetry).Inc()
	r.mu.Lock()
	first := !r.waiting
	r.waiting = true
	level := slog.LevelDebug
	if first || (delivered%10 == 0 && time.Since(r.warnedAt) >= redeliveryWarnEvery) {
		level = slog.LevelWarn
		r.warnedAt = time.Now()
	}
	r.mu.Unlock()
	r.log.Log(ctx, level, "waiting for the catalog: "+r.what+" not applied, will be redelivered",
		append(attrs, "delivery", delivered, "retry_in", delay, "error", deadLetterCause(cause))...)
	if err := msg.NakWithDelay(delay); err != nil {
		r.log.Warn("nak failed; the "+r.what+" will be redelivered after the ack wait", append(attrs, "error", err)...)
	}
}

func (r *redelivery) recovered(attrs ...any) {
	r.mu.Lock()
	was := r.waiting
	r.waiting = false
	r.mu.Unlock()
	if was {
		r.log.Info("catalog reachable again; applying "+r.what+"s", attrs...)
	}
}

// retryDefaults fills in the redelivery delays both consumers use by
// default: 250 ms doubling to 30 s.
func retryDefaults(base, maxDelay time.Duration) (time.Duration, time.Duration) {
	if base <= 0 {
		base = 250 * time.Millisecond
	}
	if maxDelay <= 0 {
		maxDelay = 30 * time.Second
	}
	return base, maxDelay
}

// holdDelay is the redelivery delay of a held message on its delivered-th
// delivery: base doubling per delivery, capped at maxDelay.
func holdDelay(delivered uint64, base, maxDelay time.Duration) time.Duration {
	delay := base
	for i := uint64(1); i < delivered && delay < maxDelay; i++ {
		delay *= 2
	}
	return min(delay, maxDelay)
}

// maxHeld bounds the notifications held at once, well below the
// consumer's MaxAckPending (1024): a flood of keys no table claims (a
// dropped table's stragglers, a hostile publisher) must not stall the
// notifications behind it for the whole grace.
const maxHeld = 256

// holder redelivers messages waiting for something that is not a fault (a
// table the catalog does not list yet, a commit it does not show yet) with
// a short, growing delay, until grace has passed since the message was
// stored; then, or when maxHeld messages are held already, it gives up.
type holder struct {
	base, max, grace time.Duration

	mu   sync.Mutex
	held map[uint64]time.Time // stream sequence -> when first held
}

// Hold outcomes.
type holdOutcome int

const (
	holdRedelivered holdOutcome = iota // negatively acknowledged for later
	holdExpired                        // the grace has passed: give up
	holdFull                           // too many held already: give up
)

// again holds msg again, or says why not (the caller then acknowledges it
// and forgets it). Without delivery metadata the message's age is unknown:
// the delivery count bounds it instead.
func (h *holder) again(msg jetstream.Msg) (holdOutcome, time.Duration, error) {
	delivered, age, seq := uint64(1), time.Duration(0), uint64(0)
	if md, err := msg.Metadata(); err == nil {
		delivered, age, seq = max(md.NumDelivered, 1), time.Since(md.Timestamp), md.Sequence.Stream
	}
	if age >= h.grace || time.Duration(delivered)*h.base > h.grace {
		h.release(msg)
		return holdExpired, age, nil
	}
	h.mu.Lock()
	if h.held == nil {
		h.held = map[uint64]time.Time{}
	}
	if _, ok := h.held[seq]; !ok {
		for s, at := range h.held { // forget messages that went away (purged, taken by another consumer)
			if time.Since(at) > 2*h.grace {
				delete(h.held, s)
			}
		}
		if len(h.held) >= maxHeld {
			h.mu.Unlock()
			return holdFull, age, nil
		}
		h.held[seq] = time.Now()
	}
	h.mu.Unlock()
	return holdRedelivered, age, msg.NakWithDelay(holdDelay(delivered, h.base, h.max))
}

// release forgets msg: it is being acknowledged.
func (h *holder) release(msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		return
	}
	h.mu.Lock()
	delete(h.held, md.Sequence.Stream)
	h.mu.Unlock()
}
