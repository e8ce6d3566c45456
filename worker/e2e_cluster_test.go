package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/triggers"
)

// clusterRig is the harness on a three-node NATS cluster: reactor's
// streams and lease bucket at three replicas, two replicas of reactor
// connected to every node, and job events seen by a subscriber on every
// node.
type clusterRig struct {
	*harness
	cluster   *embeddedtest.Cluster
	workers   []*Worker
	writers   map[string]*streamwriter.Writer
	names     []string
	published int
	mu        sync.Mutex
	jobs      *jobLog
	seen      map[string]bool
}

// recordJobsOnEveryNode subscribes to job events on each node apart (no
// failover): an event published while one node is down still reaches the
// subscribers of the others. Each event is kept once.
func (r *clusterRig) recordJobsOnEveryNode() {
	r.t.Helper()
	r.seen = map[string]bool{}
	for i := range 3 {
		nc, err := nats.Connect(r.cluster.URL(i), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		if err != nil {
			r.t.Fatal(err)
		}
		r.t.Cleanup(nc.Close)
		if _, err := nc.Subscribe(events.DefaultJobSubjectPrefix+".>", func(m *nats.Msg) {
			var ev events.JobEvent
			if json.Unmarshal(m.Data, &ev) != nil {
				return
			}
			key := ev.JobID + "/" + string(ev.Phase)
			r.jobs.mu.Lock()
			defer r.jobs.mu.Unlock()
			if !r.seen[key] {
				r.seen[key] = true
				r.jobs.evs = append(r.jobs.evs, ev)
			}
		}); err != nil {
			r.t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			r.t.Fatal(err)
		}
	}
}

func newClusterRig(t *testing.T, tables int) *clusterRig {
	t.Helper()
	c := embeddedtest.StartCluster(t, 3)
	h := newHarness(t, testThresholds, nil)
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h.conn = nc
	if h.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	if err := triggers.EnsureStreams(h.ctx, h.js, triggers.CommitOptions{StreamReplicas: 3}); err != nil {
		t.Fatal(err)
	}
	r := &clusterRig{harness: h, cluster: c, writers: map[string]*streamwriter.Writer{}, jobs: &jobLog{}}
	r.recordJobsOnEveryNode()
	h.workerCfg = func(cfg *Config) {
		cfg.NATSURL = c.URLs()
		cfg.Commits.StreamReplicas = 3
		cfg.Notifications.StreamReplicas = 3
		cfg.Leases = LeaseConfig{TTL: 6 * time.Second, Shards: 16, KVReplicas: 3}
	}
	for range 2 {
		w := h.start()
		// A node still joining refuses stream placement for a moment;
		// the worker keeps trying to connect.
		h.eventually("the replica connected", w.Connected)
		r.workers = append(r.workers, w)
	}
	h.eventually("the shards split between the replicas", func() bool {
		return r.workers[0].Leases().HeldCount()+r.workers[1].Leases().HeldCount() == 16 &&
			r.workers[0].Leases().HeldCount() > 0 && r.workers[1].Leases().HeldCount() > 0
	})
	for i := range tables {
		name := fmt.Sprintf("c%d", i)
		ident := []string{"db", name}
		if _, err := streamwriter.CreateTable(h.ctx, h.cat, ident, nil); err != nil {
			t.Fatal(err)
		}
		r.writers["db."+name] = streamwriter.New(h.cat, ident, r.publishRetrying)
		r.names = append(r.names, "db."+name)
	}
	sort.Strings(r.names)
	return r
}

// publishRetrying publishes a commit event, retrying through a leader
// election (a streaming pipeline that drops events is not what is tested).
func (r *clusterRig) publishRetrying(ctx context.Context, ev events.CommitEvent) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := r.publish(ctx, ev)
		if err == nil {
			r.mu.Lock()
			r.published++
			r.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("commit event not stored within a minute: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// commitRounds commits n times to each table, five rows each.
func (r *clusterRig) commitRounds(n int) {
	r.t.Helper()
	for range n {
		for _, name := range r.names {
			if _, err := r.writers[name].Commit(r.ctx, "a", 5); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

// leaderOf is the node index leading a stream, other than node not.
func (r *clusterRig) leaderOf(stream string, not int) int {
	r.t.Helper()
	var leader int
	r.eventually("a leader of "+stream, func() bool {
		s, err := r.js.Stream(r.ctx, stream)
		if err != nil {
			return false
		}
		info, err := s.Info(r.ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
			return false
		}
		leader = r.cluster.Node(info.Cluster.Leader)
		return leader >= 0 && leader != not
	})
	return leader
}

func (r *clusterRig) applied() int {
	n := 0.0
	for _, w := range r.workers {
		n += testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", metrics.OutcomeApplied))
	}
	return int(n)
}

func (r *clusterRig) succeeded(table string) int {
	n := 0
	for _, ev := range r.jobEvents() {
		if ev.Table == table && ev.Phase == events.JobSucceeded && ev.Kind == jobkind.Compact.String() && ev.Outcome == "succeeded" {
			n++
		}
	}
	return n
}

// jobEvents is every job event seen on any node.
func (r *clusterRig) jobEvents() []events.JobEvent { return r.jobs.all() }

// stall measures how long no replica could commit to any table: the
// longest run of 10 ms samples in which every table's owner refused.
type stall struct {
	stop    chan struct{}
	done    chan struct{}
	longest time.Duration
}

func (r *clusterRig) watchStall() *stall {
	s := &stall{stop: make(chan struct{}), done: make(chan struct{})}
	workers := slices.Clone(r.workers)
	go func() {
		defer close(s.done)
		var since time.Time
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			can := false
			for _, w := range workers {
				m := w.Leases()
				for _, name := range r.names {
					if m != nil && m.CheckCommit(name) == nil {
						can = true
					}
				}
			}
			switch {
			case can:
				since = time.Time{}
			case since.IsZero():
				since = time.Now()
			default:
				s.longest = max(s.longest, time.Since(since))
			}
		}
	}()
	return s
}

func (s *stall) end() time.Duration {
	close(s.stop)
	<-s.done
	return s.longest
}

// checkEnd: every row, every commit event applied, no job twice or beside
// another of its table.
func (r *clusterRig) checkEnd(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	published := r.published
	r.mu.Unlock()
	r.eventually(fmt.Sprintf("all %d commit events applied", published), func() bool { return r.applied() >= published })
	for _, name := range r.names {
		tbl, err := r.cat.LoadTable(r.ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatal(err)
		}
		c, err := streamwriter.Read(r.ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		if c.Total != r.writers[name].Written() {
			t.Errorf("%s holds %v, written %v", name, c.Total, r.writers[name].Written())
		}
	}
	r.jobs.checkNoJobRanTwice(t)
	t.Logf("%d commit events published, %d applied; %d job events", published, r.applied(), len(r.jobEvents()))
}

// Losing the node that leads the commit stream, and the one that leads
// the lease bucket while a replica joins (a handover under way): events
// are kept and delivered, leases renewed after the elections, tables
// compacted, rows exact.
func TestClusteredNATSLosesALeader(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node NATS cluster")
	}
	r := newClusterRig(t, 4)
	r.commitRounds(5)
	for _, name := range r.names {
		r.eventually("a compaction of "+name, func() bool { return r.succeeded(name) >= 1 })
	}

	for _, scenario := range []struct {
		what   string
		stream string
		during func()
	}{
		{"the commit stream's leader", triggers.DefaultCommitStream, nil},
		{"the lease bucket's leader during a handover", "KV_" + lease.DefaultBucket, func() {
			r.workers = append(r.workers, r.start())
		}},
	} {
		before := map[string]int{}
		for _, name := range r.names {
			before[name] = r.succeeded(name)
		}
		leader := r.leaderOf(scenario.stream, -1)
		st := r.watchStall()
		if scenario.during != nil {
			scenario.during()
		}
		stopped := time.Now()
		r.cluster.Stop(leader)
		elected := r.leaderOf(scenario.stream, leader)
		election := time.Since(stopped)
		r.commitRounds(5)
		r.cluster.Restart(leader)
		r.commitRounds(1)
		for _, name := range r.names {
			r.eventually("a compaction of "+name+" after losing "+scenario.what, func() bool { return r.succeeded(name) > before[name] })
		}
		t.Logf("stopped %s (node %s): new leader %s after %s; longest time no replica could commit: %s",
			scenario.what, r.cluster.NodeName(leader), r.cluster.NodeName(elected), election.Round(time.Millisecond),
			st.end().Round(10*time.Millisecond))
	}
	r.checkEnd(t)
}
