package planner

// What the event intake asks of the planner: the fast lane of a table near
// a threshold (package triggers) and the tables the polling safety net
// checks (worker's poller). Neither does I/O.

import (
	"time"

	"github.com/icereactor/reactor/tablename"
)

// NearThreshold reports whether a partition of the named table is at least
// half way to a file-count threshold (small_file_count, a full size tier,
// equality_delete_file_count) or over it: a table whose next commit may
// well make a job. The commit consumer gives such tables a fast lane, so
// their next event is not handled behind every other table's (package
// triggers). No I/O; false for a table the planner does not hold or has
// not read yet. Of a table with more than maxNearScan partitions it looks
// at that many, different ones each call.
func (p *Planner) NearThreshold(name string) bool {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	set := st.settings
	seen := 0
	for _, ps := range st.counters.partitions {
		if seen++; seen > maxNearScan {
			// Asked after every refresh: a table of very many
			// partitions is sampled (map order is random, so the
			// next refresh looks at others) rather than walked whole.
			return false
		}
		if near(tierCheck(ps.Counters, set)) {
			return true
		}
		if set.EqualityDeleteFileCount > 0 && near(equalityCheck(ps.Counters, set)) {
			return true
		}
	}
	return false
}

// maxNearScan bounds the partitions one NearThreshold call looks at.
const maxNearScan = 8192

// near: the check is over, or its measure is at least half its limit.
func near(c Check) bool { return c.Over || (c.Limit > 0 && 2*c.Measured >= c.Limit) }

// PollTarget is a table the polling safety net checks against the catalog
// (refresh_interval): reactor run's poller compares the catalog's current
// metadata location with Applied and refreshes the table only when they
// differ.
type PollTarget struct {
	Table tablename.Name
	// Applied is the identity (package location) of the metadata file the
	// state was last brought up to; empty when it has not been read yet.
	Applied string
	// Every is the table's refresh_interval (0: not polled).
	Every time.Duration
}

// PollTargets lists the tables this replica holds state for and owns.
func (p *Planner) PollTargets() []PollTarget {
	p.mu.Lock()
	states := make([]*tableState, 0, len(p.tables))
	for _, st := range p.tables {
		states = append(states, st)
	}
	p.mu.Unlock()
	out := make([]PollTarget, 0, len(states))
	for _, st := range states {
		if !p.ownsTable(st.table.String()) {
			continue
		}
		st.mu.Lock()
		out = append(out, PollTarget{Table: st.table, Applied: st.counters.metadataLocation,
			Every: st.settings.RefreshInterval})
		st.mu.Unlock()
	}
	return out
}
