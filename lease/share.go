package lease

// Taking a share of the shards, handing them over, and giving them up.

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// members lists the live replicas, sorted.
func (m *Manager) members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.membersLocked()
}

func (m *Manager) membersLocked() []string {
	var out []string
	for key := range m.view {
		if r, ok := strings.CutPrefix(key, "member."); ok {
			out = append(out, r)
		}
	}
	if !slices.Contains(out, m.opts.Replica) && !m.stopped {
		out = append(out, m.opts.Replica)
	}
	slices.Sort(out)
	return out
}

// share is how many shards this replica should hold among the members:
// an even split, the first S mod N replicas (by name) one more.
func share(shards int, members []string, me string) int {
	n := len(members)
	if n == 0 {
		return shards
	}
	i := slices.Index(members, me)
	if i < 0 {
		i = n
	}
	target := shards / n
	if i < shards%n {
		target++
	}
	return target
}

// reconcile takes free shards up to this replica's share and gives up what
// is over it.
func (m *Manager) reconcile(ctx context.Context) {
	m.mu.Lock()
	if m.stopped || m.paused || m.memberRev == 0 {
		m.mu.Unlock()
		return
	}
	members := m.membersLocked()
	target := share(m.opts.Shards, members, m.opts.Replica)
	m.met.LeaseMembers.Set(float64(len(members)))
	active := 0
	for _, h := range m.held {
		if !h.releasing {
			active++
		}
	}
	var free []int
	for s := range m.opts.Shards {
		if _, mine := m.held[s]; mine {
			continue
		}
		if _, taken := m.view[shardKey(s)]; !taken {
			free = append(free, s)
		}
	}
	var release []int
	if active > target {
		for s := m.opts.Shards - 1; s >= 0 && len(release) < active-target; s-- {
			if h, ok := m.held[s]; ok && !h.releasing {
				h.releasing = true
				release = append(release, s)
			}
		}
	}
	m.mu.Unlock()
	if len(release) > 0 {
		slices.Sort(release)
		m.startRelease(release)
	}
	if active >= target || len(free) == 0 {
		return
	}
	// Spread concurrent takers over the free shards.
	randomize(free)
	var got []int
	for _, s := range free {
		if active+len(got) >= target {
			break
		}
		m.mu.Lock()
		wasExpired := m.expired[s] // before our own Put clears it
		m.mu.Unlock()
		sent, epoch := time.Now(), m.epoch()
		rev, err := m.kv.Create(ctx, shardKey(s), m.value)
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
				m.log.Warn("could not take a table lease", "shard", s, "error", err)
			}
			continue
		}
		m.mu.Lock()
		h := &heldShard{rev: rev, validUntil: sent.Add(m.opts.TTL), epoch: epoch}
		if wasExpired {
			// Its last owner may have lost it without knowing yet: it
			// stops committing m.margin before the lease could expire,
			// and its abandoned jobs get as long again to end.
			h.jobsFrom = sent.Add(m.margin)
		}
		m.held[s] = h
		m.mu.Unlock()
		got = append(got, s)
	}
	if len(got) > 0 {
		slices.Sort(got)
		m.met.LeaseHandovers.WithLabelValues("acquired").Add(float64(len(got)))
		m.met.LeaseShardsHeld.Set(float64(m.HeldCount()))
		m.log.Info("table leases acquired", "shards", got, "held", m.HeldCount(), "target", target, "members", len(members))
		m.activate(got)
	}
}

// activate tells the handler about acquired shards once they are owned
// (after the handover wait of those taken over), those still held then.
func (m *Manager) activate(shards []int) {
	h := m.opts.Handler
	if h == nil {
		return
	}
	m.mu.Lock()
	var from time.Time
	for _, s := range shards {
		if hs, ok := m.held[s]; ok && hs.jobsFrom.After(from) {
			from = hs.jobsFrom
		}
	}
	m.mu.Unlock()
	fire := func() {
		m.enqueue(func(ctx context.Context) {
			now := time.Now()
			var owned []int
			m.mu.Lock()
			for _, s := range shards {
				if m.ownsLocked(s, now) {
					owned = append(owned, s)
				}
			}
			m.mu.Unlock()
			if len(owned) > 0 {
				h.Acquired(ctx, owned)
			}
		})
	}
	if wait := time.Until(from); wait > 0 {
		m.log.Info("table leases taken over after they expired: their tables are this replica's once the previous owner's jobs have surely ended",
			"shards", shards, "wait", wait.Round(time.Millisecond))
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			select {
			case <-time.After(wait):
				fire()
			case <-m.ctx.Done():
			}
		}()
		return
	}
	fire()
}

func randomize(s []int) {
	var b [8]byte
	for i := len(s) - 1; i > 0; i-- {
		_, _ = rand.Read(b[:])
		j := int(uint64(b[0])|uint64(b[1])<<8|uint64(b[2])<<16|uint64(b[3])<<24) % (i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// startRelease gives shards up after the handler says their jobs ended.
func (m *Manager) startRelease(shards []int) {
	m.log.Info("releasing table leases to rebalance", "shards", shards)
	m.enqueue(func(ctx context.Context) {
		if h := m.opts.Handler; h != nil {
			h.Releasing(ctx, shards)
		}
		m.deleteLeases(ctx, shards)
	})
}

// deleteLeases deletes the leases of shards, a few at once: each delete is
// a round trip, and every shard waits unserved until its own is done.
func (m *Manager) deleteLeases(ctx context.Context, shards []int) {
	var (
		mu   sync.Mutex
		done []int
		g    errgroup.Group
	)
	g.SetLimit(parallelDeletes)
	for _, s := range shards {
		m.mu.Lock()
		h, ok := m.held[s]
		m.mu.Unlock()
		if !ok {
			continue
		}
		g.Go(func() error {
			err := m.kv.Delete(ctx, shardKey(s), jetstream.LastRevision(h.rev))
			m.mu.Lock()
			delete(m.held, s)
			m.mu.Unlock()
			if err != nil {
				// Someone took it already, or NATS is away: it expires.
				m.log.Warn("table lease not deleted; it expires on its own", "shard", s, "error", err)
			}
			mu.Lock()
			done = append(done, s)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	if len(done) > 0 {
		slices.Sort(done)
		m.met.LeaseHandovers.WithLabelValues("released").Add(float64(len(done)))
		m.met.LeaseShardsHeld.Set(float64(m.HeldCount()))
		m.log.Info("table leases released", "shards", done, "held", m.HeldCount())
	}
}

// parallelDeletes bounds the lease deletes in flight on a release.
const parallelDeletes = 16

// Release gives up every lease and the replica's announcement (SIGTERM:
// after the jobs ended), so survivors take the shards at once.
func (m *Manager) Release(ctx context.Context) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	shards := make([]int, 0, len(m.held))
	for s, h := range m.held {
		h.releasing = true
		shards = append(shards, s)
	}
	m.stopped = true
	memberRev := m.memberRev
	m.mu.Unlock()
	m.deleteLeases(ctx, shards)
	if memberRev != 0 {
		// At the revision this incarnation wrote: never a successor's key.
		if err := m.kv.Delete(ctx, memberKey(m.opts.Replica), jetstream.LastRevision(memberRev)); err != nil {
			m.log.Warn("replica announcement not deleted; it expires on its own", "error", err)
		}
	}
	m.stop()
}

// Stop stops renewing and watching without releasing anything: the
// leases expire after the TTL, as a killed replica's do.
func (m *Manager) Stop() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.stop()
}

func (m *Manager) stop() {
	if m.alive != nil {
		_ = m.alive.Unsubscribe()
	}
	m.cancel()
	if m.watcher != nil {
		_ = m.watcher.Stop()
	}
	m.wg.Wait()
}

// Pause stops renewals (and taking shards) until Resume, as if this
// replica were cut off from NATS: its leases lapse after TTL - TTL/3.
func (m *Manager) Pause() {
	m.mu.Lock()
	m.paused = true
	m.mu.Unlock()
}

// Resume undoes Pause.
func (m *Manager) Resume() {
	m.mu.Lock()
	m.paused = false
	m.mu.Unlock()
	m.poke()
}
