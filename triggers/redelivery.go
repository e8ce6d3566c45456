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

	mu      sync.Mutex
	waiting bool
}

func (r *redelivery) later(ctx context.Context, msg jetstream.Msg, cause error, attrs ...any) {
	delivered := uint64(1)
	if md, err := msg.Metadata(); err == nil && md.NumDelivered > 0 {
		delivered = md.NumDelivered
	}
	delay := r.base
	for i := uint64(1); i < delivered && delay < r.max; i++ {
		delay *= 2
	}
	delay = min(delay, r.max)
	r.met.Events.WithLabelValues(r.source, metrics.OutcomeRetry).Inc()
	r.mu.Lock()
	first := !r.waiting
	r.waiting = true
	r.mu.Unlock()
	level := slog.LevelDebug
	if first || delivered%10 == 0 {
		level = slog.LevelWarn
	}
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
