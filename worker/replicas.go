package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/triggers"
)

// LeaseConfig configures how replicas share the tables (package lease).
// Zero values take the lease package's defaults.
type LeaseConfig struct {
	// Replica names this process among the replicas (default: the host
	// name); see lease.Options.Replica.
	Replica string
	// TTL: a killed replica's tables are owned again within about this
	// long (default 15s).
	TTL time.Duration
	// Shards the tables hash to; every replica must use the same number
	// (default 64).
	Shards int
	// KVReplicas: the lease bucket's stream replicas on a NATS cluster.
	KVReplicas int
	// ReleaseGrace bounds how long a shard given up to rebalance waits
	// for its running jobs before abandoning them (default 30s).
	ReleaseGrace time.Duration
}

// leaseManager is the worker's lease manager (nil before NATS connects).
func (w *Worker) leaseManager() *lease.Manager {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leases
}

// Leases is the worker's lease manager (nil before it connected to NATS).
func (w *Worker) Leases() *lease.Manager { return w.leaseManager() }

// leaseOwnership is the worker's one ownership.Tables, handed to the
// planner, the triggers, the job pool and the executor: the lease
// manager's answers once NATS is connected; before, no table is owned and
// none may be committed to.
type leaseOwnership struct {
	w      *Worker
	shards int // the shard count before the manager is known
}

func newLeaseOwnership(w *Worker, cfg LeaseConfig) leaseOwnership {
	shards := cfg.Shards
	if shards <= 0 {
		shards = lease.DefaultShards
	}
	return leaseOwnership{w: w, shards: shards}
}

func (o leaseOwnership) Owns(table string) bool {
	m := o.w.leaseManager()
	return m != nil && m.Owns(table)
}

func (o leaseOwnership) ShardOf(table string) int {
	if m := o.w.leaseManager(); m != nil {
		return m.ShardOf(table)
	}
	return lease.ShardOf(table, o.shards)
}

func (o leaseOwnership) CommitDeadline(table string) (time.Time, error) {
	m := o.w.leaseManager()
	if m == nil {
		return time.Time{}, fmt.Errorf("%w: %s (not connected to NATS yet)", lease.ErrLeaseLost, table)
	}
	return m.CommitDeadline(table)
}

// leaseHandler follows the leases: a shard acquired has its shard stream
// consumed and its tables discovered; a shard given up or lost has its
// jobs ended and its tables' state dropped.
type leaseHandler struct {
	w     *Worker
	grace time.Duration
	ready chan struct{} // closed once the consumers below are set
	cons  *triggers.ShardConsumers
}

func (h *leaseHandler) wait(ctx context.Context) bool {
	select {
	case <-h.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

func (h *leaseHandler) inShards(shards []int) func(table string) bool {
	set := map[int]bool{}
	for _, s := range shards {
		set[s] = true
	}
	m := h.w.leaseManager()
	return func(table string) bool { return m != nil && set[m.ShardOf(table)] }
}

func (h *leaseHandler) Acquired(ctx context.Context, shards []int) {
	if !h.wait(ctx) {
		return
	}
	if err := h.cons.Start(ctx, shards); err != nil && ctx.Err() == nil {
		// A NATS cluster electing a leader refuses consumer creation for
		// a few seconds: keep trying beside the handler's queue, or the
		// shards' forwarded events would wait until the leases move again.
		h.w.log.Warn("could not consume the shard streams of acquired tables yet; retrying", "shards", shards, "error", err)
		h.w.bg.Add(1)
		go func() {
			defer h.w.bg.Done()
			h.retryShardConsumers(ctx, shards)
		}()
	}
	h.w.rediscover()
}

// retryShardConsumers starts the shard consumers of those shards still
// owned, with backoff (250 ms doubling to 5 s), until all are consumed or
// the worker stops.
func (h *leaseHandler) retryShardConsumers(ctx context.Context, shards []int) {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = 250*time.Millisecond, 5*time.Second, 0
	attempts := 1
	err := backoff.Retry(func() error {
		attempts++
		m := h.w.leaseManager()
		if m == nil {
			return backoff.Permanent(errors.New("no lease manager"))
		}
		var owned []int
		for _, s := range shards {
			if m.OwnsShard(s) {
				owned = append(owned, s)
			}
		}
		return h.cons.Start(ctx, owned)
	}, backoff.WithContext(bo, ctx))
	if err == nil {
		h.w.log.Info("consuming the shard streams of acquired tables", "shards", shards, "attempts", attempts)
	}
}

func (h *leaseHandler) Releasing(ctx context.Context, shards []int) {
	if !h.wait(ctx) {
		return
	}
	sel := h.inShards(shards)
	h.cons.Stop(shards)
	wctx, cancel := context.WithTimeout(ctx, h.grace)
	h.w.Pool.WaitTables(wctx, sel)
	cancel()
	h.w.Pool.Abandon(sel)
	h.w.Pool.WaitTables(ctx, sel)
	n := h.w.Planner.Forget(sel)
	h.w.log.Info("tables handed over to another replica", "shards", shards, "tables", n)
}

func (h *leaseHandler) Lost(shards []int) {
	sel := h.inShards(shards)
	h.w.Pool.Abandon(sel)
	select {
	case <-h.ready:
		h.cons.Stop(shards)
	default:
	}
	n := h.w.Planner.Forget(sel)
	h.w.log.Warn("tables dropped: their leases were lost", "shards", shards, "tables", n)
}

// startLeases joins the replicas and starts the shard consumers; the
// returned function hands the handler what it waits for.
func (w *Worker) startLeases(ctx context.Context, js jetstream.JetStream, cfg Config) (*lease.Manager, *leaseHandler, error) {
	h := &leaseHandler{w: w, grace: cfg.Leases.ReleaseGrace, ready: make(chan struct{})}
	if h.grace <= 0 {
		h.grace = 30 * time.Second
	}
	m, err := lease.Start(ctx, js, lease.Options{
		Replica: cfg.Leases.Replica, TTL: cfg.Leases.TTL, Shards: cfg.Leases.Shards, KVReplicas: cfg.Leases.KVReplicas,
		Handler: h, Logger: cfg.Logger, Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, nil, err
	}
	return m, h, nil
}

// rediscover asks the discovery goroutine for another pass (tables of
// shards just acquired).
func (w *Worker) rediscover() {
	select {
	case w.discoverAgain <- struct{}{}:
	default:
	}
}

// kill stops the worker as a crash would as far as its leases go: they are
// not released and expire after their TTL (tests).
func (w *Worker) kill() {
	w.killed = true
	w.Close()
}
