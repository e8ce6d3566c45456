package planner

import (
	"slices"
	"time"
)

// Tables lists the tables the planner holds state for, sorted.
func (p *Planner) Tables() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.tables))
	for name := range p.tables {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Outlook is Explain over what the planner already holds of a table (its
// counters, snapshot summary and settings), with no I/O: what reactor plan
// would print for the snapshot the state is at, cheap enough for a status
// page to ask of every table on every view. As with Explain, cool-downs and
// a job already running do not apply. ok is false for a table the planner
// does not hold or has not read yet.
func (p *Planner) Outlook(name string, now time.Time) (plan Plan, ok bool) {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return Plan{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.counters.partitions == nil {
		return Plan{}, false
	}
	return explain(&st.counters, st.snapshots, st.table, st.settings, now), true
}
