package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
)

// The overlap check finds two jobs of a table at once, a job that
// finished twice and one that never finished; a killed replica's job ends
// with its process (a later stop of its replica's next process does not
// extend it), a stopped replica's at the stop.
func TestOverlapCheck(t *testing.T) {
	t0 := time.Now()
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(phase string, id, table, replica string, s float64) events.JobEvent {
		return events.JobEvent{Phase: phase, JobID: id, Kind: "compact", Table: table, Replica: replica, Time: at(s)}
	}
	r := &rig{byName: map[string]*replica{
		"pod-0": {name: "pod-0", exits: []time.Time{at(5)}},
		"pod-1": {name: "pod-1"},
		"pod-2": {name: "pod-2"},
	}, stops: []stopFault{
		{victim: "pod-0", stopped: at(10), continued: at(14)}, // its new process, after j1's was killed
		{victim: "pod-2", stopped: at(20), continued: at(25)},
	}}
	l := &jobLog{evs: []events.JobEvent{
		// Fine: pod-0 killed at 5 with j1 running, pod-1 takes over at 6.
		ev(events.JobStarted, "j1", "db.a", "pod-0", 1),
		ev(events.JobStarted, "j2", "db.a", "pod-1", 6),
		ev(events.JobSucceeded, "j2", "db.a", "pod-1", 7),
		// Fine: pod-2 stopped at 20 with j3 running, j4 at 24, j3's
		// failure published once continued.
		ev(events.JobStarted, "j3", "db.a", "pod-2", 19),
		ev(events.JobStarted, "j4", "db.a", "pod-1", 24),
		ev(events.JobSucceeded, "j4", "db.a", "pod-1", 24.5),
		ev(events.JobFailed, "j3", "db.a", "pod-2", 25.1),
		// Wrong: j6 starts while j5 runs, and j5 finishes twice.
		ev(events.JobStarted, "j5", "db.b", "pod-1", 30),
		ev(events.JobStarted, "j6", "db.b", "pod-2", 31),
		ev(events.JobSucceeded, "j6", "db.b", "pod-2", 31.5),
		ev(events.JobSucceeded, "j5", "db.b", "pod-1", 32),
		ev(events.JobSucceeded, "j5", "db.b", "pod-1", 33),
		// Wrong: never finished, and no NATS restart lost its end.
		ev(events.JobStarted, "j7", "db.c", "pod-1", 40),
	}}
	h := l.history()
	overlaps, unknown := r.checkOverlaps(h)
	all := strings.Join(append(h.problems, overlaps...), "\n")
	for _, want := range []string{"job j5 (db.b) finished twice", "job j6 (compact, pod-2) started", "job j7 (compact on db.c"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in:\n%s", want, all)
		}
	}
	if n := len(h.problems) + len(overlaps); n != 3 || unknown != 1 {
		t.Errorf("%d problems, %d unknown ends (want 3, 1):\n%s", n, unknown, all)
	}
	// The same lost end after a NATS restart is not a problem.
	r.natsRestarts = []time.Time{at(41)}
	if overlaps, _ := r.checkOverlaps(h); len(overlaps) != 1 {
		t.Errorf("after a NATS restart: %v", overlaps)
	}
}
