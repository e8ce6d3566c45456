package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/triggers"
)

// natsWaitLogEvery bounds how often "still waiting for NATS" is logged.
const natsWaitLogEvery = 30 * time.Second

// errClosing: the worker was closed while it was connecting.
var errClosing = errors.New("worker closing")

// natsRetryable reports whether a failed connection to NATS is worth
// retrying: a server that is down, restarting or whose JetStream is not
// up yet, yes; credentials it refuses, no (waiting will not fix them).
func natsRetryable(err error) bool {
	for _, permanent := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked,
		nats.ErrAccountAuthExpired, nats.ErrPermissionViolation, errClosing, errNATSTLS} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	return true
}

// natsSecurity is the connection's credentials and TLS settings.
func (cfg Config) natsSecurity() NATSSecurity {
	sec := cfg.NATSAuth
	if sec.CredsFile == "" {
		sec.CredsFile = cfg.NATSCreds
	}
	return sec
}

// connectNATS connects to url, creates the streams and durable consumers,
// and only then makes them the worker's: a half-made connection is taken
// apart again. Consumers live under runCtx; ctx bounds the attempt.
func (w *Worker) connectNATS(ctx, runCtx context.Context, cfg Config, url string) (err error) {
	opts := []nats.Option{nats.Name("reactor"), nats.MaxReconnects(-1), nats.CustomInboxPrefix(InboxPrefix),
		nats.DisconnectErrHandler(func(_ *nats.Conn, derr error) {
			if derr != nil {
				cfg.Logger.Warn("disconnected from NATS; reconnecting", "error", redact.Error(derr))
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { cfg.Logger.Info("reconnected to NATS", "url", redact.String(c.ConnectedUrl())) })}
	sec := cfg.natsSecurity()
	secOpts, err := sec.Options()
	if err != nil {
		return err
	}
	opts = append(opts, secOpts...)
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", redact.String(url), redact.Error(ExplainNATSError(err, sec)))
	}
	var (
		commits   *triggers.CommitConsumer
		objects   *triggers.NotificationConsumer
		refreshes *triggers.Coalescer
		leases    *lease.Manager
		shards    *triggers.ShardConsumers
	)
	defer func() {
		if err == nil {
			return
		}
		if shards != nil {
			shards.StopAll()
		}
		if objects != nil {
			objects.Stop()
		}
		if commits != nil {
			commits.Stop()
		}
		if refreshes != nil {
			refreshes.Close()
		}
		if leases != nil {
			w.mu.Lock()
			w.leases = nil
			w.mu.Unlock()
			leases.Release(context.WithoutCancel(ctx))
		}
		w.mu.Lock()
		w.reports = nil
		w.mu.Unlock()
		conn.Close()
	}()
	js, err := jetstream.New(conn)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	w.mu.Lock()
	w.reports = conn
	w.mu.Unlock()
	// The tables this replica owns: known before any event is taken.
	leases, handler, err := w.startLeases(ctx, js, cfg)
	if err != nil {
		return fmt.Errorf("table leases: %w", err)
	}
	w.mu.Lock()
	w.leases = leases
	w.mu.Unlock()
	cfg.Metrics.SetLeaseOwnerSource(leases.Owners)
	// One coalescer for both consumers: a table's commit events and its
	// metadata notifications share one refresh.
	refreshes = triggers.NewCoalescer(runCtx, w.Planner, cfg.RefreshConcurrency, triggers.AckWait, cfg.Logger, cfg.Metrics)
	cfg.Commits.Refreshes, cfg.Notifications.Refreshes = refreshes, refreshes
	cfg.Commits.Ownership, cfg.Notifications.Ownership = w.ownership, w.ownership
	cfg.Commits.CommitWatch, cfg.Notifications.CommitWatch = w.commits, w.commits
	if commits, err = triggers.StartCommits(runCtx, js, cfg.Commits, w.Planner, cfg.Logger, cfg.Metrics); err != nil {
		return err
	}
	// The location index is also the registry the deletion rule asks
	// (scope.Known): built with or without notifications.
	if _, err := w.Planner.RefreshLocations(ctx); err != nil {
		// Not fatal: the index is rebuilt when an object misses and on
		// its schedule; deletions wait for it.
		cfg.Logger.Warn("table location index not built yet; will retry (deletions wait for it)", "error", err)
	}
	if !cfg.DisableNotifications {
		if objects, err = triggers.StartNotifications(runCtx, js, cfg.Notifications, w.Planner, cfg.Logger, cfg.Metrics); err != nil {
			return err
		}
	}
	if shards, err = triggers.StartShardConsumers(runCtx, js, commits, objects, cfg.Logger); err != nil {
		return err
	}
	handler.cons = shards
	close(handler.ready)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return errClosing
	}
	w.conn, w.js, w.consumer, w.objects, w.refreshes, w.shardCons = conn, js, commits, objects, refreshes, shards
	close(w.connected)
	streams := append(commits.Streams(), triggers.DefaultShardStream, "KV_"+leases.Bucket())
	if objects != nil {
		streams = append(streams, objects.Stream())
	}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		triggers.WatchStreams(runCtx, js, streams, cfg.StreamWatchEvery, cfg.Logger, cfg.Metrics)
	}()
	every := cfg.LocationRefresh
	if every <= 0 {
		every = 5 * time.Minute
	}
	w.bg.Add(1)
	go w.refreshLocations(runCtx, every)
	w.poller = newPoller(w, w.catalog.MetadataLocation, w.catalog.MetadataLocations, refreshes.Poll)
	w.bg.Add(1)
	go w.poller.run(runCtx)
	return nil
}

// awaitNATS retries connect with exponential backoff (250 ms doubling to
// 10 s) until it succeeds, fails for good, or ctx ends; it says it is
// waiting at most every natsWaitLogEvery.
func (w *Worker) awaitNATS(ctx context.Context, connect func(context.Context) error, url string) {
	defer w.bg.Done()
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 250 * time.Millisecond
	bo.MaxInterval = 10 * time.Second
	bo.MaxElapsedTime = 0
	start := time.Now()
	said, attempts := start, 1
	op := func() error {
		attempts++
		err := connect(ctx)
		if err != nil && !natsRetryable(err) {
			return backoff.Permanent(err)
		}
		return err
	}
	notify := func(err error, _ time.Duration) {
		if time.Since(said) >= natsWaitLogEvery {
			said = time.Now()
			w.log.Warn("still waiting for NATS", "url", url, "waited", time.Since(start).Round(time.Second),
				"attempts", attempts, "error", err)
		}
	}
	err := backoff.RetryNotify(op, backoff.WithContext(bo, ctx), notify)
	switch {
	case err == nil:
		w.log.Info("connected to NATS; consuming events", "url", url, "waited", time.Since(start).Round(time.Millisecond),
			"attempts", attempts)
	case ctx.Err() != nil || errors.Is(err, errClosing):
	default:
		w.log.Error("stopped waiting for NATS: it refuses this reactor; fix the credentials and restart", "url", url, "error", err)
	}
}

// Conn is the worker's NATS connection, nil until it connected (a worker
// started while NATS was unreachable connects later: see Connected).
func (w *Worker) Conn() *nats.Conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn
}

// JetStream is the JetStream context of Conn, nil until it connected.
func (w *Worker) JetStream() jetstream.JetStream {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.js
}

// link returns what the NATS connection carries (nil before connecting).
func (w *Worker) link() (*nats.Conn, *triggers.CommitConsumer, *triggers.NotificationConsumer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn, w.consumer, w.objects
}

// stopConsuming stops both consumers, then hands the events still waiting
// for a refresh back to JetStream.
func (w *Worker) stopConsuming() {
	w.mu.Lock()
	commits, objects, refreshes, shards := w.consumer, w.objects, w.refreshes, w.shardCons
	w.mu.Unlock()
	if shards != nil {
		shards.StopAll()
	}
	if commits != nil {
		commits.Stop()
	}
	if objects != nil {
		objects.Stop()
	}
	if refreshes != nil {
		refreshes.Close()
	}
}

// Connected reports whether the worker has connected to NATS and is
// consuming events (it may be reconnecting after a disconnect).
func (w *Worker) Connected() bool {
	conn, _, _ := w.link()
	return conn != nil
}
