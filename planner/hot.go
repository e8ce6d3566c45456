package planner

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
