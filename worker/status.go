package worker

// The read-only view of the worker that the status pages (package status)
// render, and the job history they show. The history is the only thing
// kept for them: one short update per job phase (a job, not an event), in
// memory, bounded.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/sparkrun"
	"github.com/icereactor/reactor/status"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// How much job history is kept: the last finished jobs of the whole
// worker and of its failures, and the last few of each table.
const (
	recentJobs  = 100
	failedJobs  = 50
	tableJobs   = 8
	maxPending  = 100 // pending-deletion batches read for the table page
	inspectWait = 20 * time.Second
	// A table page's read of a table is kept for inspectTTL while the
	// planner's snapshot of the table has not moved, for at most
	// inspectCached tables: pages left refreshing in many browsers, or a
	// client asking for the page in a loop, read each table at most once
	// per inspectTTL.
	inspectTTL    = 30 * time.Second
	inspectCached = 32
)

// statusState is what the worker keeps for the status pages besides its
// parts' own state.
type statusState struct {
	// cfg is the thresholds in force (the start's, then each reload's),
	// for the table page's plan.
	cfg     atomic.Pointer[thresholds.Config]
	catName string
	jobs    jobHistory
	// inspecting lets one table page read a table at a time.
	inspecting chan struct{}
	// inspected are the last reads of tables (table page), by table.
	inspectedMu sync.Mutex
	inspected   map[string]cachedInspection
}

// cachedInspection is one table page's read of a table.
type cachedInspection struct {
	snapshot int64
	at       time.Time
	in       status.Inspection
}

// cachedInspect returns the read of table kept for snapshot, if fresh.
func (s *statusState) cachedInspect(table string, snapshot int64) (status.Inspection, bool) {
	s.inspectedMu.Lock()
	defer s.inspectedMu.Unlock()
	c, ok := s.inspected[table]
	if !ok || c.snapshot != snapshot || time.Since(c.at) > inspectTTL {
		return status.Inspection{}, false
	}
	return c.in, true
}

// keepInspect keeps a read of table, dropping the oldest beyond
// inspectCached.
func (s *statusState) keepInspect(table string, snapshot int64, in status.Inspection) {
	s.inspectedMu.Lock()
	defer s.inspectedMu.Unlock()
	if s.inspected == nil {
		s.inspected = map[string]cachedInspection{}
	}
	s.inspected[table] = cachedInspection{snapshot: snapshot, at: time.Now(), in: in}
	for len(s.inspected) > inspectCached {
		oldest := ""
		for t, c := range s.inspected {
			if oldest == "" || c.at.Before(s.inspected[oldest].at) {
				oldest = t
			}
		}
		delete(s.inspected, oldest)
	}
}

func (s *statusState) init(cfg *thresholds.Config, catName string) {
	s.cfg.Store(cfg)
	s.catName = catName
	s.inspecting = make(chan struct{}, 1)
}

// jobHistory is the worker's job history, fed by every job event the worker
// publishes.
type jobHistory struct {
	mu       sync.Mutex
	active   map[string]status.Job // by job id: queued or running
	recent   []status.Job          // oldest first, at most recentJobs
	failures []status.Job          // oldest first, at most failedJobs
	byTable  map[string][]status.Job
	// lastKind is each table's last finished job of each kind.
	lastKind map[string]map[string]status.Job
}

// record notes one job event.
func (l *jobHistory) record(ev events.JobEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active == nil {
		l.active, l.byTable, l.lastKind = map[string]status.Job{}, map[string][]status.Job{}, map[string]map[string]status.Job{}
	}
	j := l.active[ev.JobID]
	j.JobEvent = ev
	switch {
	case ev.Phase == events.JobStarted:
		j.StartedAt = ev.Time
	case ev.Terminal():
		delete(l.active, ev.JobID)
		l.recent = appendBounded(l.recent, j, recentJobs)
		if ev.Phase == events.JobFailed {
			l.failures = appendBounded(l.failures, j, failedJobs)
		}
		l.byTable[ev.Table] = appendBounded(l.byTable[ev.Table], j, tableJobs)
		if l.lastKind[ev.Table] == nil {
			l.lastKind[ev.Table] = map[string]status.Job{}
		}
		l.lastKind[ev.Table][ev.Kind] = j
		return
	}
	l.active[ev.JobID] = j
}

// appendBounded appends j, dropping the oldest beyond n.
func appendBounded(s []status.Job, j status.Job, n int) []status.Job {
	if len(s) >= n {
		s = append(s[:0], s[len(s)-n+1:]...)
	}
	return append(s, j)
}

// newestFirst copies s in reverse.
func newestFirst(s []status.Job) []status.Job {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func (l *jobHistory) snapshot() status.Jobs {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := status.Jobs{Recent: newestFirst(l.recent), Failures: newestFirst(l.failures), Last: make(map[string]status.Job, len(l.byTable))}
	for _, j := range l.active {
		out.Active = append(out.Active, j)
	}
	for t, js := range l.byTable {
		out.Last[t] = js[len(js)-1]
	}
	slices.SortFunc(out.Active, func(a, b status.Job) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	return out
}

func (l *jobHistory) table(name string) []status.Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	return newestFirst(l.byTable[name])
}

// tableKinds is the table's last job of each kind, in jobkind.All order.
func (l *jobHistory) tableKinds(name string) []status.Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []status.Job
	for _, k := range jobkind.All() {
		if j, ok := l.lastKind[name][k.String()]; ok {
			out = append(out, j)
		}
	}
	return out
}

// Status is the worker's state as the status pages read it.
func (w *Worker) Status() status.Source { return statusSource{w} }

// statusSource implements status.Source.
type statusSource struct{ w *Worker }

func (s statusSource) Replica() string {
	if m := s.w.leaseManager(); m != nil {
		return m.Replica()
	}
	return ""
}

// Tables are the tables the planner holds state for.
func (s statusSource) Tables() []string { return s.w.Planner.Tables() }

func (s statusSource) Outlook(table string) (planner.Plan, bool) {
	return s.w.Planner.Outlook(table, time.Now())
}

func (s statusSource) Health(table string) (planner.Health, bool) { return s.w.Planner.Health(table) }

func (s statusSource) TableCounters(table string) (int64, []planner.PartitionCounters) {
	return s.w.Planner.TableCounters(table)
}

func (s statusSource) Jobs() status.Jobs { return s.w.status.jobs.snapshot() }

func (s statusSource) TableJobs(table string) []status.Job { return s.w.status.jobs.table(table) }

func (s statusSource) TableLastJobs(table string) []status.Job {
	return s.w.status.jobs.tableKinds(table)
}

func (s statusSource) LastPoll(table string) (time.Time, string, bool) {
	s.w.mu.Lock()
	p := s.w.poller
	s.w.mu.Unlock()
	if p == nil {
		return time.Time{}, "", false
	}
	st, ok := p.state(table)
	return st.At, st.Outcome, ok
}

func (s statusSource) Owners() func(string) string {
	m := s.w.leaseManager()
	if m == nil {
		return func(string) string { return "" }
	}
	owners := m.Owners()
	return func(table string) string { return owners[m.ShardOf(table)] }
}

// errBusy: another table page is reading a table.
var errBusy = errors.New("another status page is reading a table; try again in a moment")

// Inspect loads the table and runs the planner's Explain on it (reactor
// plan's, with what the planner knows of the table's jobs), and lists its
// pending deletions. One runs at a time, and its result is kept while the
// planner's snapshot of the table has not moved, for inspectTTL: pages left refreshing in many browsers read each
// table at most once per inspectTTL, never several at once.
func (s statusSource) Inspect(ctx context.Context, name string) (status.Inspection, error) {
	st := &s.w.status
	snapshot, _ := s.w.Planner.TableCounters(name)
	if in, ok := st.cachedInspect(name, snapshot); ok {
		return in, nil
	}
	select {
	case st.inspecting <- struct{}{}:
		defer func() { <-st.inspecting }()
	case <-ctx.Done():
		return status.Inspection{}, ctx.Err()
	case <-time.After(inspectWait):
		return status.Inspection{}, errBusy
	}
	// Another page may have read it while this one waited.
	if in, ok := st.cachedInspect(name, snapshot); ok {
		return in, nil
	}
	in, err := s.inspect(ctx, name)
	if err == nil {
		st.keepInspect(name, snapshot, in)
	}
	return in, err
}

func (s statusSource) inspect(ctx context.Context, name string) (status.Inspection, error) {
	st := &s.w.status
	ident, err := tablename.Parse(name)
	if err != nil {
		return status.Inspection{}, err
	}
	tbl, err := s.w.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return status.Inspection{}, fmt.Errorf("load %s: %w", name, err)
	}
	cfg := st.cfg.Load()
	plan, err := s.w.Planner.Explain(ctx, tbl, cfg, time.Now())
	if err != nil {
		return status.Inspection{}, err
	}
	spark := cfg.SparkSettings()
	for i := range plan.Jobs {
		d := sparkrun.Explain(plan.Jobs[i].Job(), tbl.Metadata(), spark, st.catName)
		plan.Jobs[i].Backend, plan.Jobs[i].BackendWhy = d.Backend, d.Why
	}
	in := status.Inspection{Plan: plan}
	fs, err := tbl.FS(ctx)
	if err != nil {
		in.PendingErr = err
		return in, nil
	}
	recs := s.w.keys.Records(fs, deletions.RefOf(tbl))
	refs, err := recs.List()
	if err != nil {
		in.PendingErr = err
		return in, nil
	}
	for i, r := range refs {
		b := status.PendingBatch{Ref: r, Files: -1}
		if i < maxPending && !r.Intent {
			batch, err := recs.ReadBatch(r)
			var refused *deletions.Refusal
			switch {
			case err == nil:
				b.Files, b.JobID = len(batch.Files), batch.JobID
			case errors.As(err, &refused):
				b.Refused = refused.Reason
			}
		}
		in.Pending = append(in.Pending, b)
	}
	return in, nil
}
