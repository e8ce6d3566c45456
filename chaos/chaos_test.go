package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

// chaosConfig: REACTOR_CHAOS=<duration> for the long form,
// REACTOR_CHAOS_SEED=<n> to replay a schedule, REACTOR_CHAOS_REPLICAS=<n>.
type chaosConfig struct {
	duration time.Duration
	seed     uint64
	replicas int
	ttl      time.Duration
	tables   int
}

func loadConfig(t *testing.T) chaosConfig {
	cfg := chaosConfig{duration: 45 * time.Second, seed: uint64(time.Now().UnixNano()), replicas: 3, ttl: 3 * time.Second, tables: 2}
	if v := os.Getenv("REACTOR_CHAOS"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("REACTOR_CHAOS=%q: want a duration such as 10m", v)
		}
		cfg.duration, cfg.tables = d, 4
	}
	if v := os.Getenv("REACTOR_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("REACTOR_CHAOS_SEED=%q: %v", v, err)
		}
		cfg.seed = n
	}
	if v := os.Getenv("REACTOR_CHAOS_REPLICAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > 8 {
			t.Fatalf("REACTOR_CHAOS_REPLICAS=%q: want 2 to 8", v)
		}
		cfg.replicas = n
	}
	return cfg
}

// stopFault is one SIGSTOP: the victim, when it was stopped and
// continued, and the snapshots each table had just before it continued.
type stopFault struct {
	victim             string
	stopped, continued time.Time
	before             map[string]map[int64]bool
}

// oldExit: a replaced process, stopped at stopped, killed at killed.
type oldExit struct {
	replica         string
	stopped, killed time.Time
}

type rig struct {
	t        *testing.T
	cfg      chaosConfig
	dir      string
	dataDir  string
	port     int
	natsURL  string
	nats     *embedded.NATS
	conn     *nats.Conn
	js       jetstream.JetStream
	cat      catalog.Catalog
	reps     []*replica
	byName   map[string]*replica
	jobs     *jobLog
	tables   []string
	writers  map[string]*streamwriter.Writer
	counts   map[string]int // faults and writer operations by kind
	countsMu sync.Mutex

	stops        []stopFault
	natsRestarts []time.Time
	oldExits     []oldExit
	frozen       []string // jobs running when their replica was stopped
	unattributed int      // reactor snapshots whose job has no start event
}

func (r *rig) count(what string) {
	r.countsMu.Lock()
	r.counts[what]++
	r.countsMu.Unlock()
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (r *rig) startNATS() error {
	n, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(r.dataDir, "nats"), Port: r.port})
	if err != nil {
		return err
	}
	r.nats = n
	return nil
}

func newRig(t *testing.T, cfg chaosConfig) *rig {
	ctx := t.Context()
	r := &rig{t: t, cfg: cfg, dir: t.TempDir(), byName: map[string]*replica{}, jobs: &jobLog{},
		writers: map[string]*streamwriter.Writer{}, counts: map[string]int{}}
	r.dataDir = filepath.Join(r.dir, "data")
	r.port = freePort(t)
	r.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", r.port)
	if err := r.startNATS(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.nats.Shutdown() })
	var err error
	r.conn, err = nats.Connect(r.natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Name("chaos"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.conn.Close)
	if r.js, err = jetstream.New(r.conn); err != nil {
		t.Fatal(err)
	}
	if err := r.jobs.subscribe(r.conn); err != nil {
		t.Fatal(err)
	}
	if r.cat, err = embedded.OpenCatalog(ctx, filepath.Join(r.dataDir, "catalog")); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.tables {
		ident := table.Identifier{"db", fmt.Sprintf("t%d", i)}
		if _, err := streamwriter.CreateTable(ctx, r.cat, ident, streamwriter.MergeOnReadProperties); err != nil {
			t.Fatal(err)
		}
		name := strings.Join(ident, ".")
		r.tables = append(r.tables, name)
		r.writers[name] = streamwriter.New(r.cat, ident, r.publish)
	}
	t.Cleanup(func() {
		for _, rep := range r.reps {
			if rep.proc != nil && !rep.proc.Exited() {
				_ = syscall.Kill(rep.proc.Pid(), syscall.SIGCONT)
				rep.proc.Kill()
			}
		}
	})
	for i := range cfg.replicas {
		rep := &replica{name: fmt.Sprintf("pod-%d", i)}
		r.reps = append(r.reps, rep)
		r.byName[rep.name] = rep
		if err := r.startReplica(ctx, rep); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// publish sends a commit event, retrying through a NATS restart: the
// writer's events are not what is tested.
func (r *rig) publish(ctx context.Context, ev events.CommitEvent) error {
	data, err := ev.Encode()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := r.js.Publish(ctx, "iceberg.commits."+ev.Namespace+"."+ev.Table, data)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// write is the writer: appends, position deletes and equality deletes on
// random tables until ctx ends. Errors are returned at the end; every
// operation that returned is in the writer's tally.
func (r *rig) write(ctx context.Context, rng *rand.Rand) error {
	var errs []error
	for ctx.Err() == nil {
		name := r.tables[rng.IntN(len(r.tables))]
		w := r.writers[name]
		var err error
		switch p := rng.IntN(10); {
		case p < 6:
			_, err = w.Commit(ctx, []string{"a", "b"}[rng.IntN(2)], 5+rng.IntN(20))
			r.count("append")
		case p < 8:
			_, err = w.DeleteRows(ctx, pick(rng, w.LiveIDs(), 1+rng.IntN(4))...)
			r.count("position delete")
		default:
			_, err = w.DeleteKeys(ctx, pick(rng, w.LiveIDs(), 1+rng.IntN(4))...)
			r.count("equality delete")
		}
		if err != nil && ctx.Err() == nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(50+rng.IntN(150)) * time.Millisecond):
		}
	}
	return errors.Join(errs...)
}

func pick(rng *rand.Rand, ids []int64, n int) []int64 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = ids[rng.IntN(len(ids))]
	}
	return out
}
