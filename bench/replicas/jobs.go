package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/events"
)

// jobRun is one job's life as its events tell it.
type jobRun struct {
	id, table, kind, replica string
	started, finished        time.Time // finished is zero while it runs
	starts                   int       // started events for the id (1 unless it ran twice)
	outcome, err             string
}

// jobLog records every job event of every replica.
type jobLog struct {
	mu   sync.Mutex
	runs map[string]*jobRun
	sub  *nats.Subscription
	bad  int // events that did not decode
}

func watchJobs(conn *nats.Conn) (*jobLog, error) {
	l := &jobLog{runs: map[string]*jobRun{}}
	sub, err := conn.Subscribe(events.DefaultJobSubjectPrefix+".>", l.add)
	if err != nil {
		return nil, fmt.Errorf("subscribe to job events: %w", err)
	}
	l.sub = sub
	return l, nil
}

func (l *jobLog) add(m *nats.Msg) {
	var ev events.JobEvent
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := json.Unmarshal(m.Data, &ev); err != nil || ev.JobID == "" {
		l.bad++
		return
	}
	r := l.runs[ev.JobID]
	if r == nil {
		r = &jobRun{id: ev.JobID, table: ev.Table, kind: ev.Kind}
		l.runs[ev.JobID] = r
	}
	switch {
	case ev.Phase == events.JobStarted:
		r.starts++
		if r.starts == 1 {
			r.started, r.replica = ev.Time, ev.Replica
		}
	case ev.Terminal():
		r.finished, r.outcome, r.err = ev.Time, ev.Outcome, ev.Error
		if r.replica == "" {
			r.replica = ev.Replica
		}
	}
}

func (l *jobLog) stop() error { return l.sub.Unsubscribe() }

// snapshot is every job that started, ordered by start.
func (l *jobLog) snapshot() []jobRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]jobRun, 0, len(l.runs))
	for _, r := range l.runs {
		if r.starts > 0 {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].started.Before(out[j].started) })
	return out
}

// runningOn is the jobs replica has started and not finished.
func (l *jobLog) runningOn(replica string) []jobRun {
	var out []jobRun
	for _, r := range l.snapshot() {
		if r.replica == replica && r.finished.IsZero() {
			out = append(out, r)
		}
	}
	return out
}

// jobStats is what a phase's jobs show.
type jobStats struct {
	perReplica map[string]int // finished jobs (any outcome) by replica
	finished   int
	ok         int // succeeded or noop
	outcomes   map[string]int
	// ranTwice: job ids started more than once.
	ranTwice int
	// overlaps: pairs of jobs of one table whose started..finished
	// intervals overlap, in two replicas / in one.
	overlapsAcross, overlapsWithin int
	overlapSamples                 []string
	// raceFailures: failed or gave up with an error naming a lease or
	// ownership (a replica race); otherFailures: the rest.
	raceFailures, otherFailures int
	failureSamples              []string
	unfinished                  int // started, no terminal event (a killed replica's)
}

// isRaceError reports whether a job's error comes from replicas racing
// for a table (its lease lost, taken, or not held).
func isRaceError(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "lease") || strings.Contains(m, "abandon") || strings.Contains(m, "not owned") || strings.Contains(m, "owner")
}

// analyse counts the jobs in runs that started in [from, to).
func analyse(runs []jobRun, from, to time.Time) jobStats {
	s := jobStats{perReplica: map[string]int{}, outcomes: map[string]int{}}
	byTable := map[string][]jobRun{}
	for _, r := range runs {
		if r.started.Before(from) || !r.started.Before(to) {
			continue
		}
		if r.starts > 1 {
			s.ranTwice++
		}
		byTable[r.table] = append(byTable[r.table], r)
		if r.finished.IsZero() || r.outcome == "killed" {
			s.unfinished++
			continue
		}
		s.finished++
		s.perReplica[r.replica]++
		s.outcomes[r.outcome]++
		switch r.outcome {
		case "succeeded", "noop":
			s.ok++
		default:
			if isRaceError(r.err) {
				s.raceFailures++
			} else {
				s.otherFailures++
			}
			if len(s.failureSamples) < 5 {
				s.failureSamples = append(s.failureSamples, fmt.Sprintf("%s %s on %s (%s): %s", r.kind, r.outcome, r.table, r.replica, r.err))
			}
		}
	}
	for table, rs := range byTable {
		for i := range rs {
			for j := i + 1; j < len(rs); j++ {
				a, b := rs[i], rs[j]
				if !overlap(a, b) {
					continue
				}
				if a.replica != b.replica {
					s.overlapsAcross++
				} else {
					s.overlapsWithin++
				}
				if len(s.overlapSamples) < 5 {
					s.overlapSamples = append(s.overlapSamples, fmt.Sprintf("%s: %s on %s %s..%s and %s on %s %s..%s", table,
						a.id, a.replica, a.started.Format(time.StampMilli), endText(a), b.id, b.replica, b.started.Format(time.StampMilli), endText(b)))
				}
			}
		}
	}
	return s
}

// overlap reports whether two jobs ran at the same time. A job with no end
// (its replica was killed) never ended as far as its table knows: it
// overlaps whatever started after it, unless that started after its
// replica died — which the caller knows and handles by closing it.
func overlap(a, b jobRun) bool {
	aEnd, bEnd := a.finished, b.finished
	if aEnd.IsZero() {
		aEnd = time.Unix(1<<40, 0)
	}
	if bEnd.IsZero() {
		bEnd = time.Unix(1<<40, 0)
	}
	return a.started.Before(bEnd) && b.started.Before(aEnd)
}

func endText(r jobRun) string {
	if r.finished.IsZero() {
		return "(never finished)"
	}
	return r.finished.Format(time.StampMilli)
}

// closeKilled ends every unfinished job of replica at t (it was killed
// then), so it overlaps only jobs that started while it could still run.
func closeKilled(runs []jobRun, replica string, t time.Time) []jobRun {
	out := slices.Clone(runs)
	for i := range out {
		if out[i].replica == replica && out[i].finished.IsZero() {
			out[i].finished = t
			out[i].outcome = "killed"
		}
	}
	return out
}
