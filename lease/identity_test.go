package lease

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// An hour-long TTL: a test that passes with it did not wait for a lease to
// expire (each waits at most a minute).
const noExpiry = time.Hour

// replica is a manager on a connection of its own, killable as SIGKILL
// kills a process: nothing released, the connection closed.
type replica struct {
	*Manager
	nc  *nats.Conn
	rec *recorder
}

func (f *fleet) start(name string, ttl time.Duration, opts ...nats.Option) *replica {
	f.t.Helper()
	return f.startAt(f.url, name, ttl, opts...)
}

func (f *fleet) startAt(url, name string, ttl time.Duration, opts ...nats.Option) *replica {
	f.t.Helper()
	nc, js := f.connect(url, opts...)
	rec := &recorder{}
	m, err := Start(f.ctx, js, Options{Replica: name, TTL: ttl, Shards: 16, Handler: rec, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(m.Stop)
	return &replica{Manager: m, nc: nc, rec: rec}
}

func (r *replica) kill() {
	r.Stop()
	r.nc.Close()
}

// tableOn finds a table of one of r's shards.
func tableOn(t *testing.T, r *replica) string {
	t.Helper()
	held := r.Held()
	for i := 0; i < 10000; i++ {
		if name := fmt.Sprintf("db.t%d", i); slices.Contains(held, r.ShardOf(name)) {
			return name
		}
	}
	t.Fatal("no table found on the replica's shards")
	return ""
}

// A killed single replica restarted under its name owns every table again
// at once: its dead incarnation answers nobody, so it is not waited for.
func TestRestartUnderSameNameResumesAtOnce(t *testing.T) {
	f := newFleet(t)
	a := f.start("pod-0", noExpiry)
	if a.HeldCount() != 16 {
		t.Fatalf("a lone replica holds %d of 16", a.HeldCount())
	}
	a.kill()
	again := f.start("pod-0", noExpiry)
	eventually(t, "the restarted replica owns every shard", func() bool {
		return again.HeldCount() == 16 && again.rec.count(&again.rec.acquired) == 16
	})
	for i := range 50 {
		if err := again.MayRun(fmt.Sprintf("db.t%d", i)); err != nil {
			t.Fatalf("no job may run after the restart: %v", err)
		}
		if err := again.CheckCommit(fmt.Sprintf("db.t%d", i)); err != nil {
			t.Fatalf("no commit may start after the restart: %v", err)
		}
	}
	if err := again.Refused(); err != nil {
		t.Errorf("refused: %v", err)
	}
	if n := len(again.members()); n != 1 {
		t.Errorf("the fleet counts %d members after a restart, want 1: %v", n, again.members())
	}
}

// A pod replaced under a new name (a Deployment's new pod) adopts the dead
// pod's shards at once and stops counting it as a member.
func TestReplacementUnderNewNameAdoptsTheDeadOnes(t *testing.T) {
	f := newFleet(t)
	a := f.start("pod-a", noExpiry)
	a.kill()
	b := f.start("pod-b", noExpiry)
	eventually(t, "b owns every shard", func() bool { return b.HeldCount() == 16 && exclusive(b.Manager) })
	eventually(t, "the dead pod no longer a member", func() bool { return slices.Equal(b.members(), []string{"pod-b"}) })
	if err := b.MayRun(tableOn(t, b)); err != nil {
		t.Fatalf("adopted shards wait: %v", err)
	}
}

// With a survivor beside it, the restarted replica takes back its own
// share and the survivor keeps its own: every shard held once.
func TestRestartBesideASurvivor(t *testing.T) {
	f := newFleet(t)
	a := f.start("pod-a", noExpiry)
	b := f.start("pod-b", noExpiry)
	eventually(t, "an even split", func() bool { return a.HeldCount() == 8 && b.HeldCount() == 8 && exclusive(a.Manager, b.Manager) })
	bHeld := b.Held()
	a.kill()
	again := f.start("pod-a", noExpiry)
	eventually(t, "the split restored", func() bool {
		return again.HeldCount() == 8 && b.HeldCount() == 8 && exclusive(again.Manager, b.Manager)
	})
	if !slices.Equal(b.Held(), bHeld) {
		t.Errorf("the survivor's shards moved: %v -> %v", bHeld, b.Held())
	}
	if err := again.MayRun(tableOn(t, again)); err != nil {
		t.Fatalf("the restarted replica waits: %v", err)
	}
}

// A second live process started under a name in use takes nothing and
// says why; once the first is gone it takes over.
func TestDuplicateNameIsRefused(t *testing.T) {
	f := newFleet(t)
	const ttl = 3 * time.Second // retries every 600 ms
	first := f.start("pod-0", ttl)
	dup := f.start("pod-0", ttl)
	err := dup.Refused()
	if !errors.Is(err, ErrNameInUse) || !strings.Contains(err.Error(), first.Incarnation()) {
		t.Fatalf("the duplicate is not refused, or does not name the holder: %v", err)
	}
	if dup.HeldCount() != 0 || first.HeldCount() != 16 {
		t.Fatalf("held: first %d, duplicate %d", first.HeldCount(), dup.HeldCount())
	}
	// Its renewals do not take the name or any shard over the next ticks.
	time.Sleep(3 * ttl / 5)
	if dup.HeldCount() != 0 || first.HeldCount() != 16 || first.Refused() != nil {
		t.Fatalf("after renewals: first %d (refused %v), duplicate %d", first.HeldCount(), first.Refused(), dup.HeldCount())
	}
	for i := range 50 {
		if err := dup.CheckCommit(fmt.Sprintf("db.t%d", i)); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("the duplicate may commit: %v", err)
		}
	}
	first.kill()
	eventually(t, "the duplicate takes over once the first is gone", func() bool {
		return dup.Refused() == nil && dup.HeldCount() == 16
	})
}

// A predecessor that is stopped (SIGSTOP: its connection open, nobody
// answering) is not provably gone: the restart waits for its leases to
// expire, and the stopped one, resumed, stands down without committing.
func TestSilentPredecessorIsWaitedOut(t *testing.T) {
	f := newFleet(t)
	const ttl = 2 * time.Second
	old := f.start("pod-0", ttl)
	table := tableOn(t, old)
	old.Pause()
	again := f.start("pod-0", ttl)
	if err := again.Refused(); !errors.Is(err, errPredecessorSilent) {
		t.Fatalf("a silent predecessor was not waited for: %v", err)
	}
	eventually(t, "the old leases expired and taken", func() bool { return again.HeldCount() == 16 })
	eventually(t, "the handover wait over", func() bool { return again.MayRun(table) == nil })
	old.Resume()
	eventually(t, "the resumed one stands down", func() bool {
		err := old.Refused()
		return errors.Is(err, ErrSuperseded) || errors.Is(err, ErrNameInUse)
	})
	if err := old.CheckCommit(table); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the resumed predecessor may commit: %v", err)
	}
	if old.HeldCount() != 0 || again.HeldCount() != 16 {
		t.Fatalf("held: old %d, new %d", old.HeldCount(), again.HeldCount())
	}
	time.Sleep(ttl / 2)
	if old.HeldCount() != 0 || !exclusive(again.Manager) {
		t.Fatalf("the stood-down replica took shards back: %v", old.Held())
	}
}

// A replica whose connection drops long enough for the server to forget
// it looks gone; a newer incarnation adopts its shards. Once it
// reconnects it must not commit on a lease it renewed before the drop,
// and it stands down.
func TestReconnectedReplicaNeverCommitsOnAdoptedLeases(t *testing.T) {
	f := newFleet(t)
	px := newProxy(t, strings.TrimPrefix(f.url, "nats://"))
	old := f.startAt("nats://"+px.addr(), "pod-0", noExpiry,
		nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1), nats.ReconnectJitter(0, 0))
	table := tableOn(t, old)
	if err := old.CheckCommit(table); err != nil {
		t.Fatal(err)
	}
	px.cut()
	eventually(t, "the old one knows it is disconnected", func() bool { return !old.nc.IsConnected() })
	if err := old.CheckCommit(table); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a disconnected replica may commit: %v", err)
	}
	again := f.start("pod-0", noExpiry)
	eventually(t, "the new incarnation adopts every shard", func() bool { return again.HeldCount() == 16 })

	var committed []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := old.CheckCommit(table); err == nil {
				committed = append(committed, err)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	px.restore()
	eventually(t, "the old one reconnected", func() bool { return old.nc.IsConnected() })
	eventually(t, "the old one stands down", func() bool {
		err := old.Refused()
		return errors.Is(err, ErrSuperseded) || errors.Is(err, ErrNameInUse)
	})
	close(stop)
	wg.Wait()
	if len(committed) > 0 {
		t.Fatalf("the reconnected replica passed %d commit checks on leases another incarnation adopted", len(committed))
	}
	if old.HeldCount() != 0 || !exclusive(again.Manager) {
		t.Fatalf("held: old %v, new %d", old.Held(), again.HeldCount())
	}
}

// proxy forwards TCP to a NATS server; cut drops every connection and
// refuses new ones until restore.
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
