package planner

import (
	"time"

	"github.com/icereactor/reactor/tablename"
)

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
