package planner

import (
	"fmt"

	"github.com/icereactor/reactor/jobs"
)

// manifestFloor is the fewest data manifests a rewrite clustered by
// partition can leave: one per partition holding data files.
func (tc *tableCounters) manifestFloor() int {
	n := 0
	for _, ps := range tc.partitions {
		if ps.DataFiles > 0 {
			n++
		}
	}
	return max(n, 1)
}

// manifestCheck is the manifest_count threshold of a table: over once the
// current snapshot has manifest_count data manifests and more than a
// rewrite can merge them into (N partitions give N manifests again: a
// manifest_count at or below N would rewrite N into N forever).
func manifestCheck(manifests, floor, limit int) Check {
	c := Check{Threshold: jobs.ManifestCount, Measured: int64(manifests), Limit: int64(limit), Unit: "manifests",
		Over: manifests >= limit && manifests > floor}
	if manifests >= limit && manifests <= floor {
		c.Note = fmt.Sprintf("a rewrite clustered by partition cannot go below %d manifests (one per partition): "+
			"raise manifest_count above %d for this table", floor, floor)
	}
	return c
}

// manifestsOverBound reports whether a manifest rewrite is due and can
// reduce the table's data manifests.
func (st *tableState) manifestsOverBound() bool {
	n := st.counters.dataManifests
	return manifestCheck(n, st.counters.manifestFloor(), st.settings.ManifestCount).Over && n != st.manifestSettledAt
}

// manifestRewriteDueLocked decides whether the table's manifests need a
// rewrite now, and says once (per manifest count) when manifest_count
// cannot be reached.
func (p *Planner) manifestRewriteDueLocked(st *tableState) bool {
	n := st.counters.dataManifests
	c := manifestCheck(n, st.counters.manifestFloor(), st.settings.ManifestCount)
	if c.Note != "" && st.manifestFloorSaid != n {
		st.manifestFloorSaid = n
		p.log.Warn("manifest_count reached but no rewrite can reduce the manifests", "table", st.table.String(),
			"reason", "manifest_count", "manifests", n, "manifest_count", st.settings.ManifestCount, "note", c.Note)
	}
	return st.manifestsOverBound()
}
