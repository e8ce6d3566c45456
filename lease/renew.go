package lease

// The manager's loop: it watches the bucket, renews the held leases
// and drops those that lapsed.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// observe records a watcher entry.
func (m *Manager) observe(e jetstream.KeyValueEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := e.Key()
	if _, ok := m.supersededBy(e); ok && m.memberRev != 0 {
		m.superseded = true
	}
	switch e.Operation() {
	case jetstream.KeyValuePut:
		m.view[key] = e
		if n, ok := strings.CutPrefix(key, "shard."); ok {
			if s, err := strconv.Atoi(n); err == nil {
				delete(m.expired, s)
			}
		}
	default:
		delete(m.view, key)
		if n, ok := strings.CutPrefix(key, "shard."); ok {
			if s, err := strconv.Atoi(n); err == nil {
				// Delete is a clean release; Purge (a MaxAge marker:
				// the lease expired) is not.
				if e.Operation() == jetstream.KeyValueDelete {
					delete(m.expired, s)
				} else {
					m.expired[s] = true
				}
			}
		}
	}
}

func (m *Manager) watch() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case e, ok := <-m.watcher.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue
			}
			m.observe(e)
			m.poke()
		}
	}
}

func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// loop renews the held leases every TTL/5 and rebalances on every change
// the watcher sees.
func (m *Manager) loop() {
	defer m.wg.Done()
	t := time.NewTicker(m.opts.TTL / 5)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.renew(m.ctx)
			if m.Refused() != nil {
				m.tryJoin(m.ctx)
			}
		case <-m.renewNow:
			m.renew(m.ctx)
		case <-m.wake:
		}
		m.standDownIfSuperseded()
		m.reconcile(m.ctx)
	}
}

// handle runs handler calls in order.
func (m *Manager) handle() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case f := <-m.handlerQ:
			f(m.ctx)
		}
	}
}

func (m *Manager) enqueue(f func(context.Context)) {
	select {
	case m.handlerQ <- f:
	case <-m.ctx.Done():
	}
}

// renew extends every held lease; a lease whose key someone else holds now,
// or that could have expired, is lost.
func (m *Manager) renew(ctx context.Context) {
	m.mu.Lock()
	if m.paused || m.stopped {
		m.mu.Unlock()
		m.expireLapsed()
		return
	}
	shards := make([]int, 0, len(m.held))
	for s := range m.held {
		shards = append(shards, s)
	}
	m.mu.Unlock()
	var lost []int
	for _, s := range shards {
		m.mu.Lock()
		h, ok := m.held[s]
		var rev uint64
		if ok {
			rev = h.rev
		}
		m.mu.Unlock()
		if !ok {
			continue
		}
		sent, epoch := time.Now(), m.epoch()
		rctx, cancel := context.WithTimeout(ctx, m.opts.TTL/5)
		newRev, err := m.kv.Update(rctx, shardKey(s), m.value, rev)
		cancel()
		m.mu.Lock()
		h, ok = m.held[s]
		switch {
		case !ok:
		case err == nil:
			h.rev, h.validUntil, h.epoch = newRev, sent.Add(m.opts.TTL), epoch
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyNotFound),
			errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyDeleted):
			delete(m.held, s)
			lost = append(lost, s)
		default:
			// NATS unreachable: the lease lapses on its own if it stays so.
			m.log.Warn("table lease not renewed; retrying", "shard", s, "error", err)
		}
		m.mu.Unlock()
	}
	m.renewMember(ctx)
	m.lose(lost, "taken over by another replica")
	m.expireLapsed()
}

// renewMember renews this incarnation's member key at the revision it
// wrote: a newer incarnation that took the name makes it fail, and this
// one stands down instead of writing the name back.
func (m *Manager) renewMember(ctx context.Context) {
	m.mu.Lock()
	rev := m.memberRev
	m.mu.Unlock()
	if rev == 0 {
		return
	}
	newRev, err := m.kv.Update(ctx, memberKey(m.opts.Replica), m.value, rev)
	switch {
	case err == nil:
		m.mu.Lock()
		if m.memberRev == rev {
			m.memberRev = newRev
		}
		m.mu.Unlock()
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		m.mu.Lock()
		m.superseded = true
		m.mu.Unlock()
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		// Expired (renewals did not land for a TTL): announce again.
		if newRev, err := m.kv.Create(ctx, memberKey(m.opts.Replica), m.value); err == nil {
			m.mu.Lock()
			m.memberRev = newRev
			m.mu.Unlock()
		}
	default:
		if ctx.Err() == nil {
			m.log.Warn("replica announcement not renewed; retrying", "error", err)
		}
	}
}

// tryJoin claims the name (see join) and records why not.
func (m *Manager) tryJoin(ctx context.Context) {
	err := m.join(ctx)
	m.mu.Lock()
	before := m.refused
	m.refused = err
	m.mu.Unlock()
	switch {
	case err == nil && before != nil:
		m.log.Info("replica name claimed: taking table leases", "previously", before.Error())
	case err != nil && (before == nil || before.Error() != err.Error()):
		if errors.Is(err, ErrNameInUse) {
			m.log.Error("this process takes no tables: its replica name is in use", "error", err)
		} else {
			m.log.Warn("this process takes no tables yet", "error", err)
		}
	}
}

// standDownIfSuperseded gives up everything once a newer incarnation has
// claimed the name: it found this one unreachable and adopted its shards.
func (m *Manager) standDownIfSuperseded() {
	m.mu.Lock()
	if !m.superseded {
		m.mu.Unlock()
		return
	}
	m.superseded = false
	m.memberRev = 0
	m.refused = fmt.Errorf("%w: another process runs as %q now (it found this one gone from NATS, or silent until its leases expired)", ErrSuperseded, m.opts.Replica)
	lost := make([]int, 0, len(m.held))
	for s := range m.held {
		delete(m.held, s)
		lost = append(lost, s)
	}
	m.mu.Unlock()
	m.log.Error("this process takes no tables: a newer incarnation of its replica took over", "error", m.Refused())
	m.lose(lost, "a newer incarnation of this replica took them over")
}

// expireLapsed drops leases whose renewals did not land in time.
func (m *Manager) expireLapsed() {
	now := time.Now()
	var lost []int
	m.mu.Lock()
	for s, h := range m.held {
		if !now.Before(h.validUntil.Add(-m.margin)) {
			delete(m.held, s)
			lost = append(lost, s)
		}
	}
	m.mu.Unlock()
	m.lose(lost, "not renewed in time")
}

func (m *Manager) lose(shards []int, why string) {
	if len(shards) == 0 {
		return
	}
	slices.Sort(shards)
	m.met.LeaseHandovers.WithLabelValues("lost").Add(float64(len(shards)))
	m.met.LeaseShardsHeld.Set(float64(m.HeldCount()))
	m.log.Warn("table leases lost: their jobs are abandoned and nothing of theirs is committed", "shards", shards, "reason", why)
	if h := m.opts.Handler; h != nil {
		m.enqueue(func(context.Context) { h.Lost(shards) })
	}
}
