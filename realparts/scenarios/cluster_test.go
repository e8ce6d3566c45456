package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/triggers"
)

// The cluster scenarios' load: 20 tables, each committed to every 4 s
// (5 commits/s in all), 10 rows a commit.
const (
	clusterTables   = 20
	clusterInterval = 4 * time.Second
)

// Scenario 6. reactor on a real three-node nats-server cluster running
// deploy/nats/nats-server.conf's users and permissions: its streams and
// lease bucket at three replicas (REACTOR_STREAM_REPLICAS=3), two `reactor
// run` replicas given every node's URL, and a pipeline committing at 5
// commits/s over 20 tables through the REST catalog and MinIO, publishing
// each commit event to the cluster as the pipeline user. Three nodes are
// killed in turn (SIGKILL) and brought back: the one leading the commit
// stream, one leading nothing, and the lease bucket's leader while a
// replica hands its tables over. After each: every table holds exactly the
// rows written, every commit event was applied and nothing is left in the
// streams, and no job ran twice or beside another job of its table. The
// longest stall is printed, not asserted (BENCHMARKS.md section 17).
func TestCluster(t *testing.T) {
	s := need(t)
	c := s.startCluster(t)
	f := newClusterFleet(t, s, c)
	f.start()

	t.Run("CommitStreamLeader", func(t *testing.T) {
		leader := c.leaderOf(triggers.DefaultCommitStream, -1)
		f.outage(t, "the commit stream's leader", leader, triggers.DefaultCommitStream, nil)
	})
	t.Run("IdleNode", func(t *testing.T) {
		// Not the node just brought back, which leads nothing anyway:
		// one that led, its leaders stepped down.
		idle := f.idleNode(t, f.lastKilled)
		f.outage(t, "a node leading nothing", idle, triggers.DefaultCommitStream, nil)
	})
	t.Run("LeaseLeaderDuringHandover", func(t *testing.T) {
		bucket := "KV_" + lease.DefaultBucket
		leader := c.leaderOf(bucket, -1)
		rb := f.reactors[1]
		stopped := make(chan struct{})
		f.outage(t, "the lease bucket's leader during a handover", leader, bucket, func() {
			// SIGTERM: the replica releases its shards to the other one,
			// and the bucket's leader dies while it does.
			// The kill follows its shutdown line at once: the release
			// (about 40 ms after it here) and the other replica's
			// takeover run into the election.
			log := filepath.Join(rb.dir, fmt.Sprintf("reactor-%d.log", rb.starts))
			go func() {
				defer close(stopped)
				rb.stop()
			}()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(readFile(log), `"msg":"reactor shutting down`) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		})
		select {
		case <-stopped:
		case <-time.After(time.Minute):
			t.Fatal("the stopped replica did not exit")
		}
		rb.t = t
		rb.start()
		f.track(rb)
		f.settle(t, 5*time.Second)
		f.check(t, "after the replica came back")
	})
	f.finish()
}

// clusterFleet is the cluster scenarios' reactors, writers and watchers.
type clusterFleet struct {
	t        *testing.T
	s        *suite
	c        *natsCluster
	lakes    []*lake
	writers  []*pausableWriter
	reactors []*reactorProc

	published  atomic.Int64 // commit events JetStream stored
	lastKilled int
	jobs       *clusterJobs
	scrape     *scraper
}

func newClusterFleet(t *testing.T, s *suite, c *natsCluster) *clusterFleet {
	f := &clusterFleet{t: t, s: s, c: c, jobs: &clusterJobs{}}
	f.scrape = startScraper(t)
	f.jobs.subscribe(t, c)
	th := scenarioThresholds("cl", "")
	for _, name := range []string{"ra", "rb"} {
		dir := filepath.Join(s.work, "TestCluster", name)
		r := s.newReactor(t, th)
		r.dir = dir
		// The thresholds file stays where newReactor wrote it; only the
		// data directory and logs are per replica.
		r.extra = []string{
			"REACTOR_NATS_URL=" + c.urls("reactor"),
			"REACTOR_STREAM_REPLICAS=3",
			"REACTOR_REPLICA=" + name,
		}
		f.reactors = append(f.reactors, r)
	}
	return f
}

// start runs both replicas, creates the tables and starts the writers.
func (f *clusterFleet) start() {
	t := f.t
	for _, r := range f.reactors {
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r.start()
		f.track(r)
	}
	eventually(t, "the shards split between the replicas", 2*time.Minute, func() bool {
		held := 0
		for _, r := range f.reactors {
			n := r.metric("reactor_lease_shards_held", nil)
			if n == 0 {
				return false
			}
			held += int(n)
		}
		return held == lease.DefaultShards
	}, f.diag)

	pipe, err := nats.Connect(f.c.urls("pipeline"), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pipe.Close)
	js, err := jetstream.New(pipe)
	if err != nil {
		t.Fatal(err)
	}
	for i := range clusterTables {
		l := f.s.openLake(t, "cl", fmt.Sprintf("t%02d", i))
		l.createTable(nil)
		f.lakes = append(f.lakes, l)
	}
	for _, l := range f.lakes {
		publish := streamwriter.JetStreamPublisher(js, strings.TrimSuffix(triggers.DefaultCommitSubject, ">")+l.name, nil)
		counted := func(ctx context.Context, ev events.CommitEvent) error {
			err := publish(ctx, ev)
			if err == nil {
				f.published.Add(1)
			}
			return err
		}
		// Staggered so the 20 tables' commits spread evenly: one every
		// 200 ms.
		time.Sleep(clusterInterval / clusterTables)
		pw := startWriter(streamwriter.New(l.cat, l.ident, counted), clusterInterval, "p0", "p1")
		t.Cleanup(func() { _ = pw.finish() }) // stopped already unless the test failed half-way
		f.writers = append(f.writers, pw)
	}
	eventually(t, "reactor applying the writer's commit events", 2*time.Minute, func() bool {
		return f.scrape.sum("applied") >= clusterTables
	}, f.diag)
}

// track has the scraper follow a replica's current process.
func (f *clusterFleet) track(r *reactorProc) { f.scrape.add(r.p, r.httpAddr) }

// outage kills node (SIGKILL) with the writers running, waits for stream
// to have a leader elsewhere, keeps the node down a while, brings it back
// and checks. during runs just before the kill.
func (f *clusterFleet) outage(t *testing.T, what string, node int, stream string, during func()) {
	c := f.c
	streams, consumers := c.leads(node)
	probe := startStallProbe(t, c)
	f.scrape.resetGap()
	lostBefore := f.scrape.sum("lost")
	led := c.streamLeader(stream) == node
	if during != nil {
		during()
	}
	meta := c.metaLeader()
	killed := time.Now()
	c.kill(node)
	f.lastKilled = node
	elected := c.leaderOf(stream, node)
	election := time.Since(killed)
	// The other streams it led elect on their own; the slowest is the
	// cluster's election the stall is compared with.
	slowest := election
	for _, other := range streams {
		if other != stream {
			c.leaderOf(other, node)
			slowest = max(slowest, time.Since(killed))
		}
	}
	f.settle(t, 10*time.Second)
	c.start(node)
	restarted := time.Now()
	c.waitCurrent(node)
	current := time.Since(restarted)
	f.settle(t, 3*time.Second)
	stall := probe.end()
	electedAfter := "still led by " + c.nodes[elected].name
	if led {
		electedAfter = fmt.Sprintf("led by %s after %s (the election; every stream it led had a new leader after %s)",
			c.nodes[elected].name, election.Round(time.Millisecond), slowest.Round(time.Millisecond))
	}
	t.Logf("killed %s (%s; it led the streams %v and %d durable consumers %v; JetStream's meta leader was %s): %s %s; "+
		"longest gap between lease-bucket probes (no replica could renew, so none could commit): %s; "+
		"longest time some shard had no holder: %s; shard leases lost (not renewed in time): %v; restarted, current again after %s",
		c.nodes[node].name, what, streams, len(consumers), consumers, meta, stream, electedAfter,
		stall.Round(10*time.Millisecond), f.scrape.gap().Round(100*time.Millisecond), f.scrape.sum("lost")-lostBefore,
		current.Round(100*time.Millisecond))
	f.check(t, "after losing "+what)
}

// settle lets the writers run for d.
func (f *clusterFleet) settle(t *testing.T, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	for _, pw := range f.writers {
		if err := pw.failed(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
}

// idleNode makes a node lead none of reactor's streams or durable
// consumers: of the nodes other than avoid, the one leading fewest, its
// leaders stepped down. (JetStream's meta leader cannot be moved from the
// LAKE account; the log line names it.)
func (f *clusterFleet) idleNode(t *testing.T, avoid int) int {
	c := f.c
	best, fewest := -1, 0
	for i := range c.nodes {
		if i == avoid {
			continue
		}
		s, cons := c.leads(i)
		if n := len(s) + len(cons); best < 0 || n < fewest {
			best, fewest = i, n
		}
	}
	eventually(t, c.nodes[best].name+" leading nothing", time.Minute, func() bool {
		s, cons := c.leads(best)
		for _, what := range append(s, cons...) {
			if err := c.stepDown(what); err != nil {
				t.Logf("%v (retrying)", err)
			}
		}
		return len(s)+len(cons) == 0
	}, c.tails)
	if fewest == 0 {
		t.Logf("%s leads none of reactor's streams or durable consumers", c.nodes[best].name)
	} else {
		t.Logf("%s led %d of reactor's streams and durable consumers, the fewest; stepped them down", c.nodes[best].name, fewest)
	}
	return best
}

// check pauses the writers and checks everything so far: every commit
// event applied and none left in the streams, every table's rows exact,
// no job twice or beside another of its table.
func (f *clusterFleet) check(t *testing.T, when string) { f.checkAll(t, when, false) }

// checkAll is check; final waits for the streams to drain completely. An
// acknowledgement, or the delivery itself, lost with a killed node leaves
// its event unacknowledged until JetStream delivers it again after the
// consumer's AckWait (2 min), and reactor applies it (again, idempotently):
// a scenario's own check notes such events and goes on, the last one waits
// them out. Only that last drain proves every event applied: reactor
// acknowledges an event once applied (or dead-lettered, and the dead-letter
// stream stays empty), while the applied count a redelivered duplicate
// raised can hide an event still undelivered.
func (f *clusterFleet) checkAll(t *testing.T, when string, final bool) {
	t.Helper()
	for _, pw := range f.writers {
		pw.pause()
	}
	defer func() {
		for _, pw := range f.writers {
			pw.resume()
		}
	}()
	for _, pw := range f.writers {
		if err := pw.failed(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	published := f.published.Load()
	began := time.Now()
	eventually(t, fmt.Sprintf("all %d commit events applied (%s)", published, when), 3*time.Minute, func() bool {
		return f.scrape.sum("applied") >= float64(published)
	}, func() string {
		return fmt.Sprintf("applied %v of %d\n%s", f.scrape.sum("applied"), published, f.diag())
	})
	appliedAfter := time.Since(began)
	drain := 15 * time.Second
	if final {
		drain = triggers.AckWait + time.Minute
	}
	for deadline := time.Now().Add(drain); f.pending() != "" && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if left := f.pending(); left != "" {
		if final {
			t.Fatalf("left in reactor's streams %s after the writers stopped: %s\n%s", drain, left, f.diag())
		}
		t.Logf("%s: %s after %s (an acknowledgement or a delivery lost with the node: JetStream delivers it again after AckWait, %s)",
			when, left, drain, triggers.AckWait)
	}
	drainedAfter := time.Since(began)
	if n := f.streamMsgs(triggers.DefaultDeadLetterStream); n != 0 {
		t.Errorf("%d dead letters", n)
	}
	rows := 0
	for i, l := range f.lakes {
		l.t = t
		want := f.writers[i].w.Written()
		rows += int(want.Rows)
		l.checkRows(want)
	}
	f.jobs.check(t)
	t.Logf("%s: %d commit events published, %v applied (all within %s of pausing the writers, the streams drained within %s; "+
		"%d redelivered so far); %d rows in %d tables exact; %d jobs finished, none twice or overlapping",
		when, published, f.scrape.sum("applied"), appliedAfter.Round(100*time.Millisecond), drainedAfter.Round(100*time.Millisecond),
		f.redelivered(), rows, len(f.lakes), f.jobs.finished())
}

// pending describes what reactor has yet to consume: the commit
// consumer's undelivered and unacknowledged events, the shard stream's
// forwarded ones ("" when nothing).
func (f *clusterFleet) pending() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cons, err := f.c.js.Consumer(ctx, triggers.DefaultCommitStream, triggers.DefaultDurable)
	if err != nil {
		return err.Error()
	}
	info := cons.CachedInfo()
	if info.NumPending != 0 || info.NumAckPending != 0 {
		return fmt.Sprintf("commit consumer: %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
	}
	if n := f.streamMsgs(triggers.DefaultShardStream); n != 0 {
		return fmt.Sprintf("%d forwarded events in %s%s", n, triggers.DefaultShardStream, f.shardBacklog(ctx))
	}
	return ""
}

// shardBacklog names the shard consumers with events undelivered or
// unacknowledged: an undelivered one is a shard nobody consumes, an
// unacknowledged one waits for its AckWait.
func (f *clusterFleet) shardBacklog(ctx context.Context) string {
	st, err := f.c.js.Stream(ctx, triggers.DefaultShardStream)
	if err != nil {
		return ""
	}
	var b strings.Builder
	list := st.ListConsumers(ctx)
	for ci := range list.Info() {
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			fmt.Fprintf(&b, "; %s: %d undelivered, %d unacknowledged, %d redelivered, waiting pulls %d",
				ci.Name, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting)
		}
	}
	return b.String()
}

// redelivered is how many commit events JetStream delivered again (an
// acknowledgement, or the delivery itself, lost with a node).
func (f *clusterFleet) redelivered() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cons, err := f.c.js.Consumer(ctx, triggers.DefaultCommitStream, triggers.DefaultDurable)
	if err != nil {
		return -1
	}
	return cons.CachedInfo().NumRedelivered
}

func (f *clusterFleet) streamMsgs(name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := f.c.js.Stream(ctx, name)
	if err != nil {
		return -1
	}
	return int(st.CachedInfo().State.Msgs)
}

func (f *clusterFleet) diag() string {
	var b strings.Builder
	for _, r := range f.reactors {
		if r.p != nil {
			b.WriteString(r.p.tail(25) + "\n")
		}
	}
	return b.String() + f.c.tails()
}

// finish stops the writers, checks a last time and stops the replicas.
func (f *clusterFleet) finish() {
	t := f.t
	for _, pw := range f.writers {
		if err := pw.finish(); err != nil {
			t.Errorf("writer: %v", err)
		}
	}
	f.checkAll(t, "at the end", true)
	for _, r := range f.reactors {
		r.t = t
		r.stop()
	}
}
