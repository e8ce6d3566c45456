package chaos

// The job events the replicas publish, seen by the test, and what they
// must show: no job finished twice, no two jobs of one table at once.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/events"
)

type jobLog struct {
	mu  sync.Mutex
	evs []events.JobEvent
	at  time.Time // when the last event arrived
}

func (l *jobLog) subscribe(nc *nats.Conn) error {
	_, err := nc.Subscribe(events.DefaultJobSubjectPrefix+".>", func(m *nats.Msg) {
		var ev events.JobEvent
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		l.mu.Lock()
		l.evs = append(l.evs, ev)
		l.at = time.Now()
		l.mu.Unlock()
	})
	if err != nil {
		return err
	}
	return nc.Flush()
}

func (l *jobLog) all() []events.JobEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

func (l *jobLog) last() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at
}

// run is one job's life as its events tell it.
type run struct {
	id, table, replica, kind string
	start, end               time.Time
	commits                  int
	snapshot                 int64
	outcome, err             string
}

// jobHistory is what the checks read from the events.
type jobHistory struct {
	runs     map[string]*run
	problems []string
	noStart  int // a terminal event without a started one (lost in a NATS restart)
}

func (l *jobLog) history() jobHistory {
	h := jobHistory{runs: map[string]*run{}}
	evs := l.all()
	for _, ev := range evs {
		if ev.Phase != events.JobStarted {
			continue
		}
		if r, ok := h.runs[ev.JobID]; ok {
			h.problems = append(h.problems, fmt.Sprintf("job %s (%s) started twice: by %s and by %s", ev.JobID, ev.Table, r.replica, ev.Replica))
			continue
		}
		h.runs[ev.JobID] = &run{id: ev.JobID, table: ev.Table, replica: ev.Replica, kind: ev.Kind, start: ev.Time}
	}
	for _, ev := range evs {
		if !ev.Terminal() {
			continue
		}
		r, ok := h.runs[ev.JobID]
		if !ok {
			h.noStart++
			continue
		}
		if !r.end.IsZero() {
			h.problems = append(h.problems, fmt.Sprintf("job %s (%s) finished twice", ev.JobID, ev.Table))
			continue
		}
		r.end, r.commits, r.snapshot, r.outcome, r.err = ev.Time, ev.Commits, ev.CommittedSnapshotID, ev.Outcome, ev.Error
	}
	return h
}

// interval is a run's time on its table: until its end event, or until
// its process ended (killed or shut down without a last event), or until
// it was stopped (a stopped process does nothing; that it commits nothing
// after it is continued is checked apart). ok is false when the end is
// unknown: its event was lost while NATS restarted.
func (r *rig) interval(j *run) (start, end time.Time, ok bool) {
	if s := r.frozenBy(j); s != nil {
		return j.start, s.stopped, true
	}
	if !j.end.IsZero() {
		return j.start, j.end, true
	}
	if x := r.exitAfter(j); !x.IsZero() {
		return j.start, x, true
	}
	return j.start, time.Time{}, false
}

// exitAfter is when the process that ran j ended, or zero while it runs:
// the first exit of its replica's processes after it started (a replaced
// process's jobs started before its stop, its successor's after).
func (r *rig) exitAfter(j *run) time.Time {
	var first time.Time
	earliest := func(x time.Time) {
		if x.After(j.start) && (first.IsZero() || x.Before(first)) {
			first = x
		}
	}
	for _, o := range r.oldExits {
		if o.replica == j.replica && j.start.Before(o.stopped) {
			earliest(o.killed)
		}
	}
	if rep := r.byName[j.replica]; rep != nil {
		for _, x := range rep.exits {
			earliest(x)
		}
	}
	return first
}

// frozenBy is the SIGSTOP that caught j running, or nil.
func (r *rig) frozenBy(j *run) *stopFault {
	x := r.exitAfter(j)
	for i := range r.stops {
		s := &r.stops[i]
		if s.victim == j.replica && j.start.Before(s.stopped) && (x.IsZero() || x.After(s.stopped)) &&
			(j.end.IsZero() || !j.end.Before(s.stopped)) {
			return s
		}
	}
	return nil
}

// checkOverlaps: no two jobs of one table ran at the same time.
func (r *rig) checkOverlaps(h jobHistory) (problems []string, unknown int) {
	type span struct {
		j          *run
		start, end time.Time
	}
	byTable := map[string][]span{}
	for _, j := range h.runs {
		s, e, ok := r.interval(j)
		if !ok {
			unknown++
			if !r.natsRestartedAfter(j.start) {
				problems = append(problems, fmt.Sprintf("job %s (%s on %s, started %s) never finished", j.id, j.kind, j.table, j.start.Format(time.StampMilli)))
			}
			continue
		}
		byTable[j.table] = append(byTable[j.table], span{j, s, e})
	}
	for table, ss := range byTable {
		sort.Slice(ss, func(a, b int) bool { return ss[a].start.Before(ss[b].start) })
		for i := 1; i < len(ss); i++ {
			prev, cur := ss[i-1], ss[i]
			if cur.start.Before(prev.end) {
				problems = append(problems, fmt.Sprintf("table %s: job %s (%s, %s) started at %s while job %s (%s, %s) ran from %s to %s",
					table, cur.j.id, cur.j.kind, cur.j.replica, cur.start.Format(time.StampMilli),
					prev.j.id, prev.j.kind, prev.j.replica, prev.start.Format(time.StampMilli), prev.end.Format(time.StampMilli)))
			}
			if cur.end.Before(prev.end) {
				ss[i] = prev // keep the longest-running for the next comparison
			}
		}
	}
	return problems, unknown
}

func (r *rig) natsRestartedAfter(t time.Time) bool {
	for _, at := range r.natsRestarts {
		if at.After(t) {
			return true
		}
	}
	return false
}
