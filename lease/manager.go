package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/metrics"
)

// Defaults for Options.
const (
	DefaultBucket = "REACTOR_LEASES"
	// DefaultShards: enough for an even share up to a dozen replicas or
	// so; every replica of a fleet must use the same number.
	DefaultShards = 64
	// DefaultTTL: a dead replica's tables are owned again within about
	// this long (plus one renewal interval).
	DefaultTTL = 15 * time.Second
)

// ErrLeaseLost: this replica does not hold the table's lease, or no
// longer surely enough to start a commit. Nothing may be committed.
var ErrLeaseLost = errors.New("table lease not held by this replica")

// Options configure a Manager.
type Options struct {
	Bucket string
	Shards int
	// TTL is how long a lease outlives its last renewal. Renewals go every
	// TTL/5; a replica stops committing TTL/3 before its lease could have
	// expired, and one that takes over a lease that expired (rather than
	// one released to it) waits TTL/3 before running jobs.
	TTL time.Duration
	// Replica names this process in the bucket (default: host name and a
	// random suffix, so a restarted pod is a new replica).
	Replica string
	// KVReplicas is the bucket stream's replica count on a clustered NATS
	// (default 1).
	KVReplicas int
	Handler    Handler
	Logger     *slog.Logger
	Metrics    *metrics.Metrics
}

// Handler hears about ownership changes, one call at a time, in order, on
// a goroutine of the manager's (never the one that renews leases).
type Handler interface {
	// Acquired: the shards are this replica's now (bring their tables in).
	Acquired(ctx context.Context, shards []int)
	// Releasing: the shards are about to be given up; Owns is already
	// false for their tables. Return once none of their jobs can commit
	// any more (finished or abandoned); the keys are deleted after.
	Releasing(ctx context.Context, shards []int)
	// Lost: the shards' leases are gone (taken over, or not renewed in
	// time); CheckCommit already refuses their tables. Abandon their jobs.
	Lost(shards []int)
}

func (o *Options) defaults() {
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if o.Shards <= 0 {
		o.Shards = DefaultShards
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Replica == "" {
		o.Replica = DefaultReplicaID()
	}
	if o.KVReplicas <= 0 {
		o.KVReplicas = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
}

// DefaultReplicaID is the host name (a pod's name) and a random suffix.
func DefaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "reactor"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return sanitize(host) + "-" + hex.EncodeToString(b[:])
}

// sanitize keeps a name usable in a KV key.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// leaseValue is a shard key's value.
type leaseValue struct {
	Replica string `json:"replica"`
	Shards  int    `json:"shards"`
}

// Manager holds this replica's shard leases.
type Manager struct {
	opts   Options
	kv     jetstream.KeyValue
	log    *slog.Logger
	met    *metrics.Metrics
	value  []byte
	margin time.Duration

	mu   sync.Mutex
	held map[int]*heldShard
	// view is the bucket as the watcher last saw it: key -> entry.
	view map[string]jetstream.KeyValueEntry
	// expired remembers shards whose lease expired recently (the bucket's
	// MaxAge marker, kept for a TTL): whoever takes one waits the handover
	// margin, as its last owner may not know yet. A lease released
	// (Delete) or expired longer ago needs no wait.
	expired map[int]bool
	// paused stops renewals (tests: a replica cut off from NATS).
	paused  bool
	stopped bool

	wake     chan struct{}
	handlerQ chan func(context.Context)
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	watcher  jetstream.KeyWatcher
}

type heldShard struct {
	rev uint64
	// validUntil is when the lease could expire at the earliest: the last
	// renewal's send time plus the TTL (the server counts from when it
	// stored it, which is later).
	validUntil time.Time
	// jobsFrom: a lease taken over after it expired runs no job before.
	jobsFrom  time.Time
	releasing bool
}

func shardKey(shard int) string { return "shard." + strconv.Itoa(shard) }

func memberKey(replica string) string { return "member." + replica }

// Start creates (or joins) the bucket, announces this replica and takes
// its first share of shards before returning.
func Start(ctx context.Context, js jetstream.JetStream, opts Options) (*Manager, error) {
	opts.defaults()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         opts.Bucket,
		Description:    "reactor table leases: shard -> owning replica, and live replicas",
		History:        1,
		TTL:            opts.TTL,
		LimitMarkerTTL: max(opts.TTL, time.Second),
		Storage:        jetstream.FileStorage,
		Replicas:       opts.KVReplicas,
	})
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", opts.Bucket, err)
	}
	value, _ := json.Marshal(leaseValue{Replica: opts.Replica, Shards: opts.Shards})
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Manager{opts: opts, kv: kv, log: opts.Logger.With("replica", opts.Replica), met: opts.Metrics, value: value,
		margin: opts.TTL / 3, held: map[int]*heldShard{}, view: map[string]jetstream.KeyValueEntry{},
		expired: map[int]bool{}, wake: make(chan struct{}, 1), handlerQ: make(chan func(context.Context), 1024),
		ctx: runCtx, cancel: cancel}
	m.met.LeaseShards.Set(float64(opts.Shards))
	if m.watcher, err = kv.WatchAll(runCtx); err != nil {
		cancel()
		return nil, fmt.Errorf("watch lease bucket %s: %w", opts.Bucket, err)
	}
	// The watcher sends the bucket's current keys, then a nil entry.
	for initial := true; initial; {
		select {
		case e := <-m.watcher.Updates():
			if e == nil {
				initial = false
				break
			}
			m.observe(e)
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		}
	}
	if err := m.checkFleet(); err != nil {
		m.stop()
		return nil, err
	}
	if _, err := kv.Put(ctx, memberKey(opts.Replica), value); err != nil {
		m.stop()
		return nil, fmt.Errorf("announce replica %s: %w", opts.Replica, err)
	}
	m.reconcile(ctx)
	m.wg.Add(3)
	go m.watch()
	go m.loop()
	go m.handle()
	m.log.Info("table leases: replica joined", "bucket", opts.Bucket, "shards", opts.Shards, "ttl", opts.TTL,
		"held", m.HeldCount(), "members", len(m.members()))
	return m, nil
}

// checkFleet refuses to join a fleet that shards differently: two replicas
// would then own one table through two keys.
func (m *Manager) checkFleet() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, e := range m.view {
		if !strings.HasPrefix(key, "shard.") && !strings.HasPrefix(key, "member.") {
			continue
		}
		var v leaseValue
		if json.Unmarshal(e.Value(), &v) == nil && v.Shards != 0 && v.Shards != m.opts.Shards {
			return fmt.Errorf("lease bucket %s: replica %s uses %d shards, this one %d; every replica must use the same --lease-shards",
				m.opts.Bucket, v.Replica, v.Shards, m.opts.Shards)
		}
	}
	return nil
}

// ShardOf is the shard a table ("namespace.table") belongs to.
func (m *Manager) ShardOf(table string) int { return ShardOf(table, m.opts.Shards) }

// ShardOf is the shard of a table among n.
func ShardOf(table string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(table))
	return int(h.Sum32() % uint32(n))
}

// Shards is the number of shards.
func (m *Manager) Shards() int { return m.opts.Shards }

// Replica is this replica's name.
func (m *Manager) Replica() string { return m.opts.Replica }

// Owns reports whether this replica owns the table now: its events are
// applied here, its state kept here and its jobs run here. A lease taken
// over after it expired (rather than released to this replica) is owned
// only once the handover wait has passed: its previous owner may not know
// yet, and its jobs get that long to end.
func (m *Manager) Owns(table string) bool { return m.OwnsShard(m.ShardOf(table)) }

// OwnsShard is Owns for a shard.
func (m *Manager) OwnsShard(shard int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ownsLocked(shard, time.Now())
}

func (m *Manager) ownsLocked(shard int, now time.Time) bool {
	h, ok := m.held[shard]
	return ok && !h.releasing && !now.Before(h.jobsFrom) && now.Before(h.validUntil.Add(-m.margin))
}

// MayRun is Owns as an error: nil when a job of the table may start here.
func (m *Manager) MayRun(table string) error {
	if shard := m.ShardOf(table); !m.OwnsShard(shard) {
		return fmt.Errorf("%w: %s (shard %d)", ErrLeaseLost, table, shard)
	}
	return nil
}

// CheckCommit returns nil only if this replica holds the table's lease,
// renewed recently enough that it cannot expire within the commit margin
// (TTL/3): a commit that starts now ends before any other replica can own
// the table. Call it before every commit attempt.
func (m *Manager) CheckCommit(table string) error {
	_, err := m.CommitDeadline(table)
	return err
}

// CommitDeadline is CheckCommit, also returning when the lease could
// expire: a commit should not outlive it (bound its context by it).
func (m *Manager) CommitDeadline(table string) (time.Time, error) {
	shard := m.ShardOf(table)
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[shard]
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %s (shard %d is not this replica's)", ErrLeaseLost, table, shard)
	}
	if left := time.Until(h.validUntil); left < m.margin {
		return time.Time{}, fmt.Errorf("%w: %s (shard %d's lease not renewed: %s left, a commit needs %s)",
			ErrLeaseLost, table, shard, left.Round(time.Millisecond), m.margin)
	}
	return h.validUntil, nil
}

// HeldCount is the number of shards held.
func (m *Manager) HeldCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held)
}

// Held lists the shards held, ascending.
func (m *Manager) Held() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, 0, len(m.held))
	for s := range m.held {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Owners maps every shard the bucket shows held to its replica.
func (m *Manager) Owners() map[int]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int]string{}
	for key, e := range m.view {
		n, ok := strings.CutPrefix(key, "shard.")
		if !ok {
			continue
		}
		shard, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		var v leaseValue
		if json.Unmarshal(e.Value(), &v) == nil {
			out[shard] = v.Replica
		}
	}
	return out
}

// observe records a watcher entry.
func (m *Manager) observe(e jetstream.KeyValueEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := e.Key()
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
		case <-m.wake:
		}
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
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, m.opts.TTL/5)
		newRev, err := m.kv.Update(rctx, shardKey(s), m.value, rev)
		cancel()
		m.mu.Lock()
		h, ok = m.held[s]
		switch {
		case !ok:
		case err == nil:
			h.rev, h.validUntil = newRev, sent.Add(m.opts.TTL)
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
	if _, err := m.kv.Put(ctx, memberKey(m.opts.Replica), m.value); err != nil && ctx.Err() == nil {
		m.log.Warn("replica announcement not renewed; retrying", "error", err)
	}
	m.lose(lost, "taken over by another replica")
	m.expireLapsed()
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
	if m.stopped || m.paused {
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
		sent := time.Now()
		rev, err := m.kv.Create(ctx, shardKey(s), m.value)
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
				m.log.Warn("could not take a table lease", "shard", s, "error", err)
			}
			continue
		}
		m.mu.Lock()
		h := &heldShard{rev: rev, validUntil: sent.Add(m.opts.TTL)}
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

func (m *Manager) deleteLeases(ctx context.Context, shards []int) {
	var done []int
	for _, s := range shards {
		m.mu.Lock()
		h, ok := m.held[s]
		m.mu.Unlock()
		if !ok {
			continue
		}
		err := m.kv.Delete(ctx, shardKey(s), jetstream.LastRevision(h.rev))
		m.mu.Lock()
		delete(m.held, s)
		m.mu.Unlock()
		if err != nil {
			// Someone took it already, or NATS is away: it expires.
			m.log.Warn("table lease not deleted; it expires on its own", "shard", s, "error", err)
		}
		done = append(done, s)
	}
	if len(done) > 0 {
		m.met.LeaseHandovers.WithLabelValues("released").Add(float64(len(done)))
		m.met.LeaseShardsHeld.Set(float64(m.HeldCount()))
		m.log.Info("table leases released", "shards", done, "held", m.HeldCount())
	}
}

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
	m.mu.Unlock()
	m.deleteLeases(ctx, shards)
	if err := m.kv.Delete(ctx, memberKey(m.opts.Replica)); err != nil {
		m.log.Warn("replica announcement not deleted; it expires on its own", "error", err)
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
