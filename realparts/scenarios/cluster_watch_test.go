package scenarios

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/lease"
)

// failed is the writer's first error, without stopping it.
func (pw *pausableWriter) failed() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.err
}

// scraper reads every replica process's /metrics every 100 ms and keeps
// the last figures of each: counters of a process that has exited stay in
// the sums (a restarted replica's counters start at zero), so a sum
// covers every incarnation up to its last scrape.
type scraper struct {
	mu    sync.Mutex
	procs []*scraped
	stop  chan struct{}
	done  chan struct{}
	// Since resetGap: the longest time the live replicas together held
	// fewer than every shard (some tables had no owner to commit for
	// them: a handover, or a lease waiting out its expiry).
	unheldSince time.Time
	longestGap  time.Duration
}

type scraped struct {
	p    *process
	addr string
	last map[string]float64 // applied, lost, held
}

func startScraper(t *testing.T) *scraper {
	s := &scraper{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			s.mu.Lock()
			procs := append([]*scraped(nil), s.procs...)
			s.mu.Unlock()
			held := 0.0
			for _, sp := range procs {
				if sp.p.exited() {
					continue
				}
				if got, err := scrapeLease(sp.addr); err == nil {
					s.mu.Lock()
					sp.last = got
					s.mu.Unlock()
					held += got["held"]
				} else {
					held += sp.last["held"] // a missed scrape is no evidence either way
				}
			}
			s.mu.Lock()
			switch now := time.Now(); {
			case held >= lease.DefaultShards:
				s.unheldSince = time.Time{}
			case s.unheldSince.IsZero():
				s.unheldSince = now
			default:
				s.longestGap = max(s.longestGap, now.Sub(s.unheldSince))
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		close(s.stop)
		<-s.done
	})
	return s
}

func (s *scraper) add(p *process, addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, &scraped{p: p, addr: addr})
}

func (s *scraper) resetGap() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unheldSince, s.longestGap = time.Time{}, 0
}

func (s *scraper) gap() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.longestGap
}

// sum adds up a figure over every process scraped.
func (s *scraper) sum(what string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n float64
	for _, sp := range s.procs {
		n += sp.last[what]
	}
	return n
}

// scrapeLease reads the figures the cluster scenarios follow: commit
// events applied, shard leases lost (not renewed in time or taken over),
// shards held.
func scrapeLease(addr string) (map[string]float64, error) {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range families["reactor_events_total"].GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		if labels["source"] == "commit" && labels["outcome"] == "applied" {
			out["applied"] += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["reactor_lease_handovers_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "event" && lp.GetValue() == "lost" {
				out["lost"] += m.GetCounter().GetValue()
			}
		}
	}
	for _, m := range families["reactor_lease_shards_held"].GetMetric() {
		out["held"] += m.GetGauge().GetValue()
	}
	return out, nil
}

// stallProbe measures how long no replica could commit: every 100 ms it
// writes a key the test owns into reactor's lease bucket and reads it
// back, as the reactor user, on a connection given every node's URL like
// reactor's. A replica may commit only on a lease renewed through that
// bucket on its current connection (lease.Manager.CheckCommit), so while
// the probe cannot write there no renewal can either; the figure is the
// longest gap between two successful probes. (It leaves the key; the
// bucket's max age, the lease TTL, removes it. reactor ignores keys that
// are neither shard. nor member.)
type stallProbe struct {
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	longest time.Duration
}

func startStallProbe(t *testing.T, c *natsCluster) *stallProbe {
	t.Helper()
	// The deploy file lets the reactor user read replies only under its
	// own inbox prefix (worker.InboxPrefix).
	nc, err := nats.Connect(c.urls("reactor"), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.CustomInboxPrefix("_INBOX_reactor"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	kv, err := js.KeyValue(ctx, lease.DefaultBucket)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProbe{stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { p.end() }) // a scenario that failed half-way
	go func() {
		defer close(p.done)
		defer nc.Close()
		last := time.Now()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			val := strconv.Itoa(i)
			_, err := kv.Put(ctx, "realparts-probe", []byte(val))
			if err == nil {
				var e jetstream.KeyValueEntry
				if e, err = kv.Get(ctx, "realparts-probe"); err == nil && string(e.Value()) == val {
					now := time.Now()
					p.longest = max(p.longest, now.Sub(last))
					last = now
				}
			}
			cancel()
		}
	}()
	return p
}

func (p *stallProbe) end() time.Duration {
	p.once.Do(func() { close(p.stop) })
	<-p.done
	return p.longest
}

// clusterJobs is every job event seen on any node: a subscriber per node
// (the monitor user, allowed reactor.jobs.>), so an event published while
// one node is down reaches the others'. Each subscriber counts what it
// saw of each (job, phase); the most any one saw is how often it was
// published.
type clusterJobs struct {
	mu     sync.Mutex
	counts []map[string]int // per subscriber
	evs    []events.JobEvent
	seen   map[string]bool
}

func (j *clusterJobs) subscribe(t *testing.T, c *natsCluster) {
	t.Helper()
	j.seen = map[string]bool{}
	for i := range c.nodes {
		j.counts = append(j.counts, map[string]int{})
		counts := j.counts[i]
		nc, err := nats.Connect(c.url(i, "monitor"), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if _, err := nc.Subscribe(events.DefaultJobSubjectPrefix+".>", func(m *nats.Msg) {
			var ev events.JobEvent
			if json.Unmarshal(m.Data, &ev) != nil {
				return
			}
			key := ev.JobID + "/" + ev.Phase
			j.mu.Lock()
			defer j.mu.Unlock()
			counts[key]++
			if !j.seen[key] {
				j.seen[key] = true
				j.evs = append(j.evs, ev)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

func (j *clusterJobs) finished() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, ev := range j.evs {
		if ev.Terminal() {
			n++
		}
	}
	return n
}

// check fails unless every job started once and finished at most once,
// and no two jobs of one table ran at the same time, in one replica or
// across the two.
func (j *clusterJobs) check(t *testing.T) {
	t.Helper()
	j.mu.Lock()
	evs := append([]events.JobEvent(nil), j.evs...)
	times := map[string]int{}
	for _, counts := range j.counts {
		for key, n := range counts {
			times[key] = max(times[key], n)
		}
	}
	j.mu.Unlock()
	type run struct {
		id, replica, table string
		start, end         time.Time
	}
	runs := map[string]*run{}
	for _, ev := range evs {
		key := ev.JobID + "/" + ev.Phase
		if n := times[key]; n > 1 && (ev.Phase == events.JobStarted || ev.Terminal()) {
			t.Errorf("job %s of %s: %d %s events", ev.JobID, ev.Table, n, ev.Phase)
		}
		switch {
		case ev.Phase == events.JobStarted:
			runs[ev.JobID] = &run{id: ev.JobID, replica: ev.Replica, table: ev.Table, start: ev.Time}
		case ev.Terminal() && runs[ev.JobID] != nil:
			if !runs[ev.JobID].end.IsZero() {
				t.Errorf("job %s of %s finished twice (succeeded and failed)", ev.JobID, ev.Table)
			}
			runs[ev.JobID].end = ev.Time
		}
	}
	byTable := map[string][]*run{}
	for _, r := range runs {
		byTable[r.table] = append(byTable[r.table], r)
	}
	for table, rs := range byTable {
		sort.Slice(rs, func(a, b int) bool { return rs[a].start.Before(rs[b].start) })
		for i := 1; i < len(rs); i++ {
			prev := rs[i-1]
			if prev.end.IsZero() || rs[i].start.Before(prev.end) {
				t.Errorf("table %s: job %s (replica %s) started at %s while job %s (replica %s) ran (%s to %s)",
					table, rs[i].id, rs[i].replica, rs[i].start.Format(time.StampMicro), prev.id, prev.replica,
					prev.start.Format(time.StampMicro), prev.end.Format(time.StampMicro))
			}
		}
	}
}
