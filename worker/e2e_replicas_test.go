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

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// jobLog records every job event published on the harness's NATS.
type jobLog struct {
	mu  sync.Mutex
	evs []events.JobEvent
}

func (h *harness) recordJobs() *jobLog {
	h.t.Helper()
	l := &jobLog{}
	sub, err := h.conn.Subscribe(events.DefaultJobSubjectPrefix+".>", func(m *nats.Msg) {
		var ev events.JobEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			h.t.Errorf("job event: %v", err)
			return
		}
		l.mu.Lock()
		l.evs = append(l.evs, ev)
		l.mu.Unlock()
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return l
}

func (l *jobLog) all() []events.JobEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// succeeded counts the table's succeeded jobs of kind.
func (l *jobLog) succeeded(name string, kind jobkind.Kind) int {
	n := 0
	for _, ev := range l.all() {
		if ev.Table == name && ev.Kind == kind.String() && ev.Phase == events.JobSucceeded && ev.Outcome == "succeeded" {
			n++
		}
	}
	return n
}

// checkNoJobRanTwice fails unless every job started once, no two jobs of
// one table ran at the same time, in one replica or across two, and each
// job was started by the replica named in owner (when given).
func (l *jobLog) checkNoJobRanTwice(t *testing.T) {
	t.Helper()
	type run struct {
		id, replica string
		start, end  time.Time
	}
	runs := map[string]*run{}
	var order []string
	for _, ev := range l.all() {
		switch ev.Phase {
		case events.JobStarted:
			if r, ok := runs[ev.JobID]; ok {
				t.Errorf("job %s (%s) started twice: by %s and by %s", ev.JobID, ev.Table, r.replica, ev.Replica)
				continue
			}
			runs[ev.JobID] = &run{id: ev.JobID, replica: ev.Replica, start: ev.Time}
			order = append(order, ev.JobID)
		case events.JobSucceeded, events.JobFailed:
			if r, ok := runs[ev.JobID]; ok {
				if !r.end.IsZero() {
					t.Errorf("job %s finished twice", ev.JobID)
				}
				r.end = ev.Time
			}
		}
	}
	byTable := map[string][]*run{}
	for _, ev := range l.all() {
		if ev.Phase == events.JobStarted {
			byTable[ev.Table] = append(byTable[ev.Table], runs[ev.JobID])
		}
	}
	for name, rs := range byTable {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			prev := rs[i-1]
			if prev.end.IsZero() || rs[i].start.Before(prev.end) {
				t.Errorf("table %s: job %s (replica %s) started at %s while job %s (replica %s) ran (%s to %s)",
					name, rs[i].id, rs[i].replica, rs[i].start.Format(time.StampMicro), prev.id, prev.replica,
					prev.start.Format(time.StampMicro), prev.end.Format(time.StampMicro))
			}
		}
	}
}

// replicaTables creates tables until each of the two replicas owns at
// least two, and returns their writers by name and the owner of each.
func (h *harness) replicaTables(a, b *Worker) (map[string]*streamwriter.Writer, map[string]*Worker) {
	h.t.Helper()
	writers := map[string]*streamwriter.Writer{}
	owner := map[string]*Worker{}
	counts := map[*Worker]int{}
	for i := 0; counts[a] < 2 || counts[b] < 2; i++ {
		if i > 64 {
			h.t.Fatal("no table name hashes to the second replica's shards")
		}
		name := fmt.Sprintf("r%d", i)
		w := a
		if b.Leases().Owns("db." + name) {
			w = b
		}
		if counts[w] >= 3 {
			continue
		}
		ident := table.Identifier{"db", name}
		if _, err := streamwriter.CreateTable(h.ctx, h.cat, ident, nil); err != nil {
			h.t.Fatal(err)
		}
		writers["db."+name] = streamwriter.New(h.cat, ident, h.publish)
		owner["db."+name] = w
		counts[w]++
	}
	return writers, owner
}

func (h *harness) startReplicas(ttl time.Duration) (*Worker, *Worker) {
	h.t.Helper()
	h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{TTL: ttl, Shards: 16} }
	a := h.start()
	b := h.start()
	h.eventually("the shards split between the replicas", func() bool {
		ha, hb := a.Leases().Held(), b.Leases().Held()
		if len(ha)+len(hb) != 16 || len(ha) == 0 || len(hb) == 0 {
			return false
		}
		for _, s := range ha {
			if slices.Contains(hb, s) {
				return false
			}
		}
		return len(ha) == 8 && len(hb) == 8
	})
	return a, b
}

// Two replicas on one NATS: each table is owned by one of them and its
// jobs run there; when one dies (its leases are not released), the other
// takes its tables within the lease time and runs their due jobs; no job
// runs twice, no table has two jobs at once, and every row is kept.
func TestTwoReplicasShareTablesAndTakeOverOnDeath(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	recorded := h.recordJobs()
	a, b := h.startReplicas(2 * time.Second)
	writers, owner := h.replicaTables(a, b)
	names := make([]string, 0, len(writers))
	for name := range writers {
		names = append(names, name)
	}
	sort.Strings(names)

	commitAll := func(n int) {
		for range n {
			for _, name := range names {
				if _, err := writers[name].Commit(h.ctx, "a", 5); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	commitAll(5)
	for _, name := range names {
		h.eventually("a compaction of "+name, func() bool { return recorded.succeeded(name, jobkind.Compact) >= 1 })
	}
	for _, ev := range recorded.all() {
		if ev.Phase == events.JobStarted && ev.Replica != owner[ev.Table].Leases().Replica() {
			t.Errorf("job %s of %s started by %s, which does not own it", ev.JobID, ev.Table, ev.Replica)
		}
	}

	// a dies: b takes its tables once their leases expire.
	dead := a.Leases().Replica()
	a.kill()
	h.eventually("b owns every shard", func() bool { return b.Leases().HeldCount() == 16 })
	commitAll(5)
	for _, name := range names {
		h.eventually("a second compaction of "+name, func() bool { return recorded.succeeded(name, jobkind.Compact) >= 2 })
	}
	after := false
	for _, ev := range recorded.all() {
		if ev.Phase == events.JobStarted && owner[ev.Table] == a && ev.Replica == b.Leases().Replica() {
			after = true
		}
	}
	if !after {
		t.Errorf("no job of the dead replica %s's tables ran on the survivor", dead)
	}
	recorded.checkNoJobRanTwice(t)
	for _, name := range names {
		tbl, err := h.cat.LoadTable(h.ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatal(err)
		}
		c, err := streamwriter.Read(h.ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		if c.Total != writers[name].Written() {
			t.Errorf("%s holds %v, written %v", name, c.Total, writers[name].Written())
		}
	}
}

// heldLoads holds the executor's table loads of one table until released
// (or the job's context ends): a job that has started and not yet read
// anything.
type heldLoads struct {
	catalog.Catalog
	entered chan struct{}
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	table string
}

func (c *heldLoads) hold(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.table = name
}

func (c *heldLoads) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.mu.Lock()
	held := c.table != "" && strings.Join(ident, ".") == c.table
	c.mu.Unlock()
	if held {
		c.once.Do(func() { close(c.entered) })
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Catalog.LoadTable(ctx, ident)
}

// A replica whose lease is taken while its job runs (its renewals stop, as
// when it is cut off from NATS) commits nothing: the job is abandoned
// before the other replica runs one, and the other's job compacts the
// table; rows exact.
func TestReplicaWhoseLeaseWasTakenDoesNotCommit(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	recorded := h.recordJobs()
	const ttl = 2 * time.Second
	held := &heldLoads{entered: make(chan struct{}), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held.release) }) }
	t.Cleanup(release)
	h.workerCfg = func(c *Config) {
		c.Leases = LeaseConfig{TTL: ttl, Shards: 16}
		c.executorCatalog = func(cat catalog.Catalog) catalog.Catalog { held.Catalog = cat; return held }
	}
	a := h.start() // only a's executor holds loads
	h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{TTL: ttl, Shards: 16} }
	b := h.start()
	h.eventually("the shards split", func() bool { return a.Leases().HeldCount() == 8 && b.Leases().HeldCount() == 8 })
	name := ""
	for i := 0; name == ""; i++ {
		if n := fmt.Sprintf("db.held%d", i); a.Leases().Owns(n) {
			name = n
		}
	}
	held.hold(name)
	ident := strings.Split(name, ".")
	if _, err := streamwriter.CreateTable(h.ctx, h.cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(h.cat, ident, h.publish)
	for range 5 {
		if _, err := w.Commit(h.ctx, "a", 5); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-held.entered: // a's compaction started and waits at its first load
	case <-time.After(time.Minute):
		t.Fatal("a's compaction did not reach its first load within a minute")
	}
	a.Leases().Pause()
	h.eventually("b owns the table", func() bool { return b.Leases().Owns(name) })
	if err := a.Leases().CheckCommit(name); err == nil {
		t.Error("a may still commit to a table b owns")
	}
	release()
	h.eventually("b compacts the table", func() bool { return recorded.succeeded(name, jobkind.Compact) >= 1 })
	var aJob, bJob *events.JobEvent
	for _, ev := range recorded.all() {
		if ev.Table != name || ev.Kind != jobkind.Compact.String() {
			continue
		}
		switch {
		case ev.Replica == a.Leases().Replica() && ev.Terminal():
			aJob = &ev
		case ev.Replica == b.Leases().Replica() && ev.Phase == events.JobStarted && bJob == nil:
			bJob = &ev
		}
	}
	if aJob == nil || aJob.Phase != events.JobFailed || aJob.CommittedSnapshotID != 0 {
		t.Fatalf("a's job: %+v; want failed, nothing committed", aJob)
	}
	tbl, err := h.cat.LoadTable(h.ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[jobs.SnapshotJobProperty] == aJob.JobID {
			t.Errorf("a committed snapshot %d after losing the lease", s.SnapshotID)
		}
	}
	if bJob == nil || bJob.Time.Before(aJob.Time) {
		t.Errorf("b's job started at %v, before a's ended at %v", bJob, aJob.Time)
	}
	recorded.checkNoJobRanTwice(t)
	c, err := streamwriter.Read(h.ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != w.Written() {
		t.Errorf("table holds %v, written %v", c.Total, w.Written())
	}
	t.Logf("a's job: %s (%s)", aJob.Outcome, aJob.Error)
}
