package worker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
)

func TestJobHistory(t *testing.T) {
	var l jobHistory
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	scheduled := map[string]time.Time{}
	ev := func(phase, id, table string) events.JobEvent {
		at = at.Add(time.Second)
		if phase == events.JobScheduled {
			scheduled[id] = at
		}
		return events.JobEvent{Phase: phase, JobID: id, Table: table, Kind: "compact", Time: at, ScheduledAt: scheduled[id]}
	}
	l.record(ev(events.JobScheduled, "a", "db.t"))
	l.record(ev(events.JobScheduled, "b", "db.u"))
	l.record(ev(events.JobStarted, "a", "db.t"))
	s := l.snapshot()
	if len(s.Active) != 2 || !s.Active[0].Running() || s.Active[1].Running() {
		t.Fatalf("active: %+v", s.Active)
	}
	l.record(ev(events.JobSucceeded, "a", "db.t"))
	l.record(ev(events.JobFailed, "b", "db.u"))
	s = l.snapshot()
	if len(s.Active) != 0 || len(s.Recent) != 2 || s.Recent[0].JobID != "b" || len(s.Failures) != 1 {
		t.Fatalf("after both finished: %+v", s)
	}
	if s.Last["db.t"].JobID != "a" || s.Last["db.t"].StartedAt.IsZero() {
		t.Errorf("last of db.t: %+v", s.Last["db.t"])
	}
	// Bounded: the oldest go first.
	for i := range 3 * recentJobs {
		id := fmt.Sprint("x", i)
		l.record(ev(events.JobScheduled, id, "db.t"))
		l.record(ev(events.JobFailed, id, "db.t"))
	}
	s = l.snapshot()
	if len(s.Recent) != recentJobs || len(s.Failures) != failedJobs || s.Recent[0].JobID != fmt.Sprint("x", 3*recentJobs-1) {
		t.Fatalf("bounds: %d recent, %d failures, newest %s", len(s.Recent), len(s.Failures), s.Recent[0].JobID)
	}
	if got := l.table("db.t"); len(got) != tableJobs || got[0].JobID != s.Recent[0].JobID {
		t.Fatalf("db.t: %d jobs", len(got))
	}
	if got := l.table("db.u"); len(got) != 1 || got[0].JobID != "b" {
		t.Fatalf("db.u: %+v", got)
	}
}

// The table page shows each kind's last job: many expiries after a
// compaction push it out of the table's recent jobs, not out of its
// kind's.
func TestJobHistoryKeepsEachKindsLast(t *testing.T) {
	var l jobHistory
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	finish := func(id, kind string) {
		at = at.Add(time.Second)
		l.record(events.JobEvent{Phase: events.JobScheduled, JobID: id, Table: "demo.events", Kind: kind, ScheduledAt: at})
		l.record(events.JobEvent{Phase: events.JobSucceeded, JobID: id, Table: "demo.events", Kind: kind, Time: at, Outcome: "succeeded"})
	}
	for i := range 15 {
		finish(fmt.Sprint("c", i), "compact")
	}
	for i := range 2 * tableJobs {
		finish(fmt.Sprint("e", i), "expire_snapshots")
		finish(fmt.Sprint("d", i), "delete_expired_files")
	}
	for _, j := range l.table("demo.events") {
		if j.Kind == "compact" {
			t.Fatalf("the recent jobs still hold a compaction: %+v", j)
		}
	}
	var got []string
	for _, j := range l.tableKinds("demo.events") {
		got = append(got, j.Kind+" "+j.JobID)
	}
	want := []string{"compact c14", "expire_snapshots e15", "delete_expired_files d15"}
	if !slices.Equal(got, want) {
		t.Errorf("last of each kind: %v, want %v", got, want)
	}
}
