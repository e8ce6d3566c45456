package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
)

type recorder struct {
	mu       sync.Mutex
	acquired []int
	released []int
	lost     []int
}

func (r *recorder) Acquired(_ context.Context, s []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acquired = append(r.acquired, s...)
}

func (r *recorder) Releasing(_ context.Context, s []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = append(r.released, s...)
}

func (r *recorder) Lost(s []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = append(r.lost, s...)
}

func (r *recorder) count(which *[]int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(*which)
}

type fleet struct {
	t   *testing.T
	ctx context.Context
	url string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return &fleet{t: t, ctx: ctx, url: srv.URL()}
}

// join starts a replica on a connection of its own.
func (f *fleet) join(name string, ttl time.Duration, h Handler) *Manager {
	f.t.Helper()
	_, js := f.connect(f.url)
	m, err := Start(f.ctx, js, Options{Replica: name, TTL: ttl, Shards: 16, Handler: h, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(m.Stop)
	return m
}

// connect opens a connection of its own, closed when the test ends.
func (f *fleet) connect(url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	f.t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		f.t.Fatal(err)
	}
	return nc, js
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// exclusive reports whether every shard is held by exactly one of ms.
func exclusive(ms ...*Manager) bool {
	seen := map[int]int{}
	for _, m := range ms {
		for _, s := range m.Held() {
			seen[s]++
		}
	}
	if len(seen) != ms[0].Shards() {
		return false
	}
	for _, n := range seen {
		if n != 1 {
			return false
		}
	}
	return true
}

// Two replicas split the shards evenly, each held by exactly one; a
// replica that dies (stops renewing, deletes nothing) loses its shards to
// the survivor within about the TTL, which waits the handover margin
// before running their jobs; the dead one refuses every commit once its
// leases could have expired.
func TestLeasesSplitAndMoveOnDeath(t *testing.T) {
	f := newFleet(t)
	const ttl = 2 * time.Second
	ra, rb := &recorder{}, &recorder{}
	a := f.join("a", ttl, ra)
	if a.HeldCount() != 16 {
		t.Fatalf("a lone replica holds %d of 16 shards", a.HeldCount())
	}
	b := f.join("b", ttl, rb)
	eventually(t, "an even split", func() bool { return a.HeldCount() == 8 && b.HeldCount() == 8 && exclusive(a, b) })
	eventually(t, "a told to release 8", func() bool { return ra.count(&ra.released) == 8 })
	table := ""
	for i := 0; table == ""; i++ {
		if name := fmt.Sprintf("db.t%d", i); slices.Contains(a.Held(), a.ShardOf(name)) {
			table = name
		}
	}
	if err := a.CheckCommit(table); err != nil {
		t.Fatalf("the owner may not commit: %v", err)
	}
	if err := b.CheckCommit(table); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a non-owner may commit: %v", err)
	}
	a.Stop() // killed: nothing released
	eventually(t, "b owns every shard", func() bool { return b.HeldCount() == 16 && exclusive(b) })
	if err := a.CheckCommit(table); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("the dead replica may still commit: %v", err)
	}
	eventually(t, "the handover wait over", func() bool { return b.MayRun(table) == nil })
	if err := b.CheckCommit(table); err != nil {
		t.Errorf("the new owner may not commit: %v", err)
	}
}

// A replica cut off from NATS keeps its leases only until they could have
// expired: it stops committing, hears Lost, and the other takes over.
func TestLeaseLapsesWhenRenewalsStop(t *testing.T) {
	f := newFleet(t)
	const ttl = 2 * time.Second
	ra := &recorder{}
	a := f.join("a", ttl, ra)
	b := f.join("b", ttl, nil)
	eventually(t, "an even split", func() bool { return a.HeldCount() == 8 && b.HeldCount() == 8 && exclusive(a, b) })
	table := ""
	for i := 0; table == ""; i++ {
		if name := fmt.Sprintf("db.t%d", i); slices.Contains(a.Held(), a.ShardOf(name)) {
			table = name
		}
	}
	a.Pause()
	eventually(t, "a's leases lapse", func() bool { return a.CheckCommit(table) != nil })
	eventually(t, "a hears it lost 8 shards", func() bool { return ra.count(&ra.lost) == 8 })
	if a.Owns(table) {
		t.Error("a still owns a table it lost")
	}
	eventually(t, "b takes them", func() bool { return b.HeldCount() == 16 })
	a.Resume()
	eventually(t, "the shards split again", func() bool { return a.HeldCount() == 8 && b.HeldCount() == 8 && exclusive(a, b) })
}

// A replica that shuts down releases its leases; the survivor takes them
// at once, with no handover wait.
func TestReleaseHandsOverAtOnce(t *testing.T) {
	f := newFleet(t)
	const ttl = 30 * time.Second // expiry would take this long
	a := f.join("a", ttl, nil)
	b := f.join("b", ttl, nil)
	eventually(t, "an even split", func() bool { return a.HeldCount() == 8 && b.HeldCount() == 8 && exclusive(a, b) })
	start := time.Now()
	a.Release(f.ctx)
	eventually(t, "b owns every shard", func() bool { return b.HeldCount() == 16 })
	if waited := time.Since(start); waited > ttl/2 {
		t.Logf("took %s (the TTL is %s)", waited, ttl)
	}
	for i := range 50 {
		if err := b.MayRun(fmt.Sprintf("db.t%d", i)); err != nil {
			t.Fatalf("a released lease needs no handover wait: %v", err)
		}
	}
}

// A replica sharding differently cannot join the fleet.
func TestShardCountMismatch(t *testing.T) {
	f := newFleet(t)
	f.join("a", time.Minute, nil)
	nc, err := nats.Connect(f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(f.ctx, js, Options{Replica: "b", TTL: time.Minute, Shards: 32, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("a replica with 32 shards joined a fleet of 16")
	}
	t.Log(err)
}

func TestShare(t *testing.T) {
	members := []string{"a", "b", "c"}
	got := share(64, members, "a") + share(64, members, "b") + share(64, members, "c")
	if got != 64 || share(64, members, "a") != 22 || share(64, members, "c") != 21 {
		t.Errorf("shares of 64 among 3: %d %d %d", share(64, members, "a"), share(64, members, "b"), share(64, members, "c"))
	}
}
