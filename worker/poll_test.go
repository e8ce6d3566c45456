package worker

import (
	"testing"
	"time"

	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/tablename"
)

// The poller's per-table schedule follows the tables the planner lists: a
// table dropped or handed to another replica is forgotten (its next check
// and its last poll), so a fleet's churn does not grow the maps, and a
// table listed again starts over at a random point of its interval.
func TestPollerForgetsTablesNoLongerListed(t *testing.T) {
	p := newPoller(&Worker{Metrics: metrics.New()}, nil, nil, nil)
	target := func(name string, every time.Duration) planner.PollTarget {
		return planner.PollTarget{Table: tablename.MustParseName(name), Every: every}
	}
	a, b, off := target("db.a", time.Minute), target("db.b", time.Minute), target("db.off", 0)
	now := time.Unix(1_700_000_000, 0)

	steps := []struct {
		name     string
		targets  []planner.PollTarget
		at       time.Duration
		record   []string
		wantNext []string
		wantLast []string
		wantDue  int
	}{
		{"first sight schedules, nothing due", []planner.PollTarget{a, b, off}, 0, []string{"db.a", "db.b"}, []string{"db.a", "db.b"}, []string{"db.a", "db.b"}, 0},
		{"both due after an interval", []planner.PollTarget{a, b, off}, 2 * time.Minute, nil, []string{"db.a", "db.b"}, []string{"db.a", "db.b"}, 2},
		{"b handed over: forgotten", []planner.PollTarget{a}, 2 * time.Minute, nil, []string{"db.a"}, []string{"db.a"}, 1},
		{"a check of b in flight records after", []planner.PollTarget{a}, 2 * time.Minute, []string{"db.b"}, []string{"db.a"}, []string{"db.a"}, 1},
		{"b back: scheduled afresh, not due", []planner.PollTarget{a, b}, 2 * time.Minute, nil, []string{"db.a", "db.b"}, []string{"db.a"}, 1},
		{"nothing listed", nil, 3 * time.Minute, nil, nil, nil, 0},
	}
	for _, s := range steps {
		due, _ := p.dueAt(s.targets, now.Add(s.at))
		for _, name := range s.record {
			p.record(name, PollUnchanged)
		}
		if s.record != nil { // the next round sees what was recorded
			due, _ = p.dueAt(s.targets, now.Add(s.at))
		}
		if len(due) != s.wantDue {
			t.Errorf("%s: %d due, want %d", s.name, len(due), s.wantDue)
		}
		p.mu.Lock()
		if len(p.next) != len(s.wantNext) || len(p.last) != len(s.wantLast) {
			t.Errorf("%s: next %v, last %v; want next %v, last %v", s.name, p.next, p.last, s.wantNext, s.wantLast)
		}
		for _, name := range s.wantNext {
			if _, ok := p.next[name]; !ok {
				t.Errorf("%s: %s not scheduled", s.name, name)
			}
		}
		for _, name := range s.wantLast {
			if _, ok := p.last[name]; !ok {
				t.Errorf("%s: %s's last poll forgotten", s.name, name)
			}
		}
		p.mu.Unlock()
	}
}
