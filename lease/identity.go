package lease

// Who a replica is: a stable name (the pod's), an incarnation per process
// start, and a liveness subject each incarnation answers on. A restarted
// process proves its predecessor gone by asking that subject (NATS answers
// "no responders" at once for a subject nobody subscribes to, which is
// what a dead process's closed connection leaves), then adopts its leases
// without waiting for them to expire. A predecessor that answers is a live
// process with the same name: this one refuses every shard and says why.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNameInUse: another live process holds this replica's name. It keeps
// its shards; this process takes none until that one is gone.
var ErrNameInUse = errors.New("replica name in use by a live process")

// ErrSuperseded: a newer incarnation of this replica took its name (it
// found this one unreachable) and its shards; this process takes none.
var ErrSuperseded = errors.New("replica superseded by a newer incarnation")

// errPredecessorSilent: the name's holder neither answers nor is provably
// gone (a stopped process, or one cut off from NATS): its key must expire.
var errPredecessorSilent = errors.New("predecessor does not answer")

// AliveSubjectPrefix starts every liveness subject:
// <prefix>.<bucket>.<replica>.<incarnation>. The NATS user reactor runs as
// must be allowed to publish and subscribe to it (deploy/nats).
const AliveSubjectPrefix = "reactor.replicas"

// DefaultReplicaName is the host name, which is the pod's name on
// Kubernetes: a container the kubelet restarts comes back under the same
// name and resumes its own tables at once.
func DefaultReplicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "reactor"
	}
	return sanitize(host)
}

func newIncarnation() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func aliveSubject(bucket, replica, incarnation string) string {
	return AliveSubjectPrefix + "." + bucket + "." + replica + "." + incarnation
}

// holder is one incarnation seen in the bucket, with what it holds.
type holder struct {
	value   leaseValue
	member  jetstream.KeyValueEntry // its member key, if it is the name's holder
	shards  map[int]uint64          // shard -> revision
	verdict probeVerdict
}

type probeVerdict int

const (
	verdictUnknown probeVerdict = iota // no answer: stopped, cut off, or slow
	verdictGone                        // nobody subscribes: the process is gone
	verdictAlive                       // it answered
)

func (v probeVerdict) String() string {
	switch v {
	case verdictGone:
		return "gone"
	case verdictAlive:
		return "alive"
	}
	return "silent"
}

// probeTimeout bounds one liveness question: long enough for a loaded
// process to answer, short against the restart target of two seconds.
func (m *Manager) probeTimeout() time.Duration {
	return min(max(m.opts.TTL/20, 250*time.Millisecond), time.Second)
}

// probe asks an incarnation whether it is alive. Only "no responders" is
// proof of death; a timeout proves nothing. One retry covers a server
// that has not yet noticed a just-closed connection.
func (m *Manager) probe(ctx context.Context, v leaseValue) probeVerdict {
	if m.nc == nil || v.Incarnation == "" {
		return verdictUnknown
	}
	subject := aliveSubject(m.opts.Bucket, v.Replica, v.Incarnation)
	for attempt := 0; attempt < 2; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, m.probeTimeout())
		_, err := m.nc.RequestWithContext(pctx, subject, nil)
		cancel()
		switch {
		case err == nil:
			return verdictAlive
		case errors.Is(err, nats.ErrNoResponders):
			return verdictGone
		case ctx.Err() != nil:
			return verdictUnknown
		}
	}
	return verdictUnknown
}

// answer is the liveness responder: this incarnation's lease value, unless
// it is paused (cut off, in tests) or stopped.
func (m *Manager) answer(msg *nats.Msg) {
	m.mu.Lock()
	quiet := m.paused || m.stopped
	m.mu.Unlock()
	if !quiet && msg.Reply != "" {
		_ = msg.Respond(m.value)
	}
}

// holders groups the bucket's shard and member keys by incarnation, this
// one's excluded. Values without an incarnation (written by a reactor
// that predates incarnations) are left out: they cannot be asked, so
// their leases expire as before.
func (m *Manager) holders() map[string]*holder {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]*holder{}
	get := func(v leaseValue) *holder {
		h := out[v.Incarnation]
		if h == nil {
			h = &holder{value: v, shards: map[int]uint64{}}
			out[v.Incarnation] = h
		}
		return h
	}
	for key, e := range m.view {
		var v leaseValue
		if json.Unmarshal(e.Value(), &v) != nil || v.Incarnation == "" || v.Incarnation == m.incarnation {
			continue
		}
		if r, ok := strings.CutPrefix(key, "member."); ok && r == v.Replica {
			get(v).member = e
		} else if n, ok := strings.CutPrefix(key, "shard."); ok {
			if s, err := strconv.Atoi(n); err == nil && s < m.opts.Shards {
				get(v).shards[s] = e.Revision()
			}
		}
	}
	return out
}

// join claims this replica's name and adopts what provably gone
// incarnations held. It returns ErrNameInUse while a live process holds
// the name and errPredecessorSilent while its holder neither answers nor
// is provably gone; both are retried on every renewal tick.
func (m *Manager) join(ctx context.Context) error {
	hs := m.holders()
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.verdict = m.probe(ctx, h.value)
		}()
	}
	wg.Wait()

	m.mu.Lock()
	current, named := m.view[memberKey(m.opts.Replica)]
	m.mu.Unlock()
	var prev leaseValue
	if named {
		_ = json.Unmarshal(current.Value(), &prev)
	}
	var rev uint64
	switch h := hs[prev.Incarnation]; {
	case !named:
	case prev.Incarnation == m.incarnation:
		rev = current.Revision()
	case h != nil && h.verdict == verdictAlive:
		return fmt.Errorf("%w: %q is held by incarnation %s (started %s); give each process its own --replica",
			ErrNameInUse, m.opts.Replica, prev.Incarnation, prev.Started.Format(time.RFC3339))
	case h != nil && h.verdict == verdictGone:
		rev = current.Revision()
	default:
		return fmt.Errorf("%w: replica name %q is held by incarnation %s, which neither answers nor is provably gone; its key expires within %s",
			errPredecessorSilent, m.opts.Replica, prev.Incarnation, m.opts.TTL)
	}
	var err error
	if rev == 0 {
		rev, err = m.kv.Create(ctx, memberKey(m.opts.Replica), m.value)
	} else {
		rev, err = m.kv.Update(ctx, memberKey(m.opts.Replica), m.value, rev)
	}
	if err != nil {
		return fmt.Errorf("claim replica name %q: %w", m.opts.Replica, err)
	}
	m.mu.Lock()
	m.memberRev = rev
	m.refused = nil
	m.mu.Unlock()
	m.adopt(ctx, hs)
	return nil
}

// adopt takes over the shards of incarnations that are provably gone, up
// to this replica's share, and deletes the rest of their keys (a release
// on the dead process's behalf: its jobs ended with it) so other replicas
// take them at once. Their member keys go too, so the share no longer
// counts them.
func (m *Manager) adopt(ctx context.Context, hs map[string]*holder) {
	var gone []*holder
	for _, h := range hs {
		if h.verdict == verdictGone {
			gone = append(gone, h)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, h := range gone {
		if h.member == nil || h.value.Replica == m.opts.Replica {
			continue
		}
		if err := m.kv.Delete(ctx, h.member.Key(), jetstream.LastRevision(h.member.Revision())); err != nil {
			m.log.Warn("a gone replica's announcement not deleted; it expires on its own", "gone", h.value.Replica, "error", err)
			continue
		}
		// The watcher sees the delete later; until then the share
		// would still count the gone replica.
		m.forget(h.member.Key(), h.member.Revision())
	}
	m.mu.Lock()
	target := share(m.opts.Shards, m.membersLocked(), m.opts.Replica)
	active := len(m.held)
	m.mu.Unlock()

	var adopted, freed []int
	for _, h := range gone {
		shards := make([]int, 0, len(h.shards))
		for s := range h.shards {
			shards = append(shards, s)
		}
		slices.Sort(shards)
		for _, s := range shards {
			rev := h.shards[s]
			if active+len(adopted) >= target {
				if err := m.kv.Delete(ctx, shardKey(s), jetstream.LastRevision(rev)); err == nil {
					m.forget(shardKey(s), rev)
					freed = append(freed, s)
				}
				continue
			}
			sent := time.Now()
			epoch := m.epoch()
			newRev, err := m.kv.Update(ctx, shardKey(s), m.value, rev)
			if err != nil {
				// Someone else moved first: the key is theirs now.
				continue
			}
			m.mu.Lock()
			m.held[s] = &heldShard{rev: newRev, validUntil: sent.Add(m.opts.TTL), epoch: epoch}
			m.mu.Unlock()
			adopted = append(adopted, s)
		}
	}
	var names []string
	for _, h := range gone {
		names = append(names, h.value.Replica+"/"+h.value.Incarnation)
	}
	slices.Sort(names)
	m.log.Info("table leases adopted from replicas that are gone (their NATS connections closed): no expiry wait",
		"gone", names, "adopted", len(adopted), "freed", len(freed), "target", target)
	if len(adopted) > 0 {
		slices.Sort(adopted)
		m.met.LeaseHandovers.WithLabelValues("acquired").Add(float64(len(adopted)))
		m.met.LeaseShardsHeld.Set(float64(m.HeldCount()))
		m.activate(adopted)
	}
}

// forget drops a key this replica just deleted from the view, unless the
// watcher already shows a newer revision of it.
func (m *Manager) forget(key string, rev uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.view[key]; ok && e.Revision() == rev {
		delete(m.view, key)
	}
}

// supersededBy reports whether e is this replica's member key rewritten by
// another incarnation.
func (m *Manager) supersededBy(e jetstream.KeyValueEntry) (leaseValue, bool) {
	if e.Key() != memberKey(m.opts.Replica) || e.Operation() != jetstream.KeyValuePut {
		return leaseValue{}, false
	}
	var v leaseValue
	if json.Unmarshal(e.Value(), &v) != nil || v.Incarnation == m.incarnation {
		return leaseValue{}, false
	}
	return v, true
}

// Refused is why this replica holds no shards although it runs (its name
// in use by a live process, superseded, or waiting out a silent
// predecessor), or nil. /readyz reports it.
func (m *Manager) Refused() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// Incarnation names this process's run of the replica.
func (m *Manager) Incarnation() string { return m.incarnation }

// epoch is the connection's count of reconnects: a lease renewed on an
// earlier connection is not trusted for a commit until it is renewed on
// this one (the server may have dropped the old connection and a newer
// incarnation adopted the lease meanwhile).
func (m *Manager) epoch() uint64 {
	if m.nc == nil {
		return 0
	}
	return m.nc.Stats().Reconnects
}

// connected reports whether NATS is reachable on the epoch a lease was
// renewed on.
func (m *Manager) connected(epoch uint64) bool {
	return m.nc == nil || (m.nc.IsConnected() && m.nc.Stats().Reconnects == epoch)
}
