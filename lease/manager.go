package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/ownership"
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
// longer surely enough to start a commit. Nothing may be committed. It is
// ownership.ErrNotHeld, which the layers that take an ownership.Tables
// test for.
var ErrLeaseLost = ownership.ErrNotHeld

// Options configure a Manager.
type Options struct {
	Bucket string
	Shards int
	// TTL is how long a lease outlives its last renewal. Renewals go every
	// TTL/5; a replica stops committing TTL/3 before its lease could have
	// expired, and one that takes over a lease that expired (rather than
	// one released to it) waits TTL/3 before running jobs.
	TTL time.Duration
	// Replica names this process in the bucket (default: the host name,
	// a pod's name on Kubernetes). It must be stable across restarts of
	// one replica and unique among live processes: a restart under the
	// same name resumes the predecessor's shards at once once it is
	// provably gone, and a second live process under a name in use takes
	// no shards (Refused says why).
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
		o.Replica = DefaultReplicaName()
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
	// Incarnation and Started name this process's run of the replica;
	// a value without them was written by a reactor that cannot be asked
	// whether it is alive.
	Incarnation string    `json:"incarnation,omitempty"`
	Started     time.Time `json:"started,omitzero"`
}

// Manager holds this replica's shard leases.
type Manager struct {
	opts        Options
	kv          jetstream.KeyValue
	nc          *nats.Conn
	log         *slog.Logger
	met         *metrics.Metrics
	value       []byte
	margin      time.Duration
	incarnation string
	alive       *nats.Subscription

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
	// memberRev is this incarnation's member key revision once it has
	// claimed the name (0 before, or after it was superseded).
	memberRev uint64
	// refused says why this replica holds nothing (see Refused).
	refused error
	// superseded: the watcher saw another incarnation take the name.
	superseded bool

	wake     chan struct{}
	renewNow chan struct{}
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
	// epoch is the connection's reconnect count when the lease was last
	// renewed: a commit needs the same connection still up.
	epoch uint64
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
		// A member key per replica and a key per shard, each a few
		// hundred bytes: the bounds leave room for thousands of both and
		// keep a client that may write here from filling the disk.
		MaxBytes:     8 << 20,
		MaxValueSize: 4 << 10,
		Storage:      jetstream.FileStorage,
		Replicas:     opts.KVReplicas,
	})
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", opts.Bucket, err)
	}
	incarnation := newIncarnation()
	value, _ := json.Marshal(leaseValue{Replica: opts.Replica, Shards: opts.Shards, Incarnation: incarnation,
		Started: time.Now().UTC().Truncate(time.Millisecond)})
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Manager{opts: opts, kv: kv, nc: js.Conn(), log: opts.Logger.With("replica", opts.Replica, "incarnation", incarnation),
		met: opts.Metrics, value: value, incarnation: incarnation,
		margin: opts.TTL / 3, held: map[int]*heldShard{}, view: map[string]jetstream.KeyValueEntry{},
		expired: map[int]bool{}, wake: make(chan struct{}, 1), renewNow: make(chan struct{}, 1),
		handlerQ: make(chan func(context.Context), 1024), ctx: runCtx, cancel: cancel}
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
	// Answer liveness questions before claiming the name: a process
	// started under the same name a moment later must find this one.
	if m.nc != nil {
		if m.alive, err = m.nc.Subscribe(aliveSubject(opts.Bucket, opts.Replica, incarnation), m.answer); err == nil {
			err = m.nc.FlushTimeout(opts.TTL / 5)
		}
		if err != nil {
			m.stop()
			return nil, fmt.Errorf("replica %s: answer liveness questions on %s: %w", opts.Replica,
				aliveSubject(opts.Bucket, opts.Replica, incarnation), err)
		}
	}
	m.wg.Add(3)
	go m.watch()
	go m.handle()
	m.tryJoin(ctx)
	m.reconcile(ctx)
	go m.loop()
	if err := m.Refused(); err != nil {
		return m, nil
	}
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
	if !m.connected(h.epoch) {
		select {
		case m.renewNow <- struct{}{}:
		default:
		}
		return time.Time{}, fmt.Errorf("%w: %s (shard %d: the NATS connection dropped since its last renewal; renewing first)",
			ErrLeaseLost, table, shard)
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

// Bucket is the name of the lease bucket (its stream is KV_<bucket>).
func (m *Manager) Bucket() string { return m.opts.Bucket }

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
