package planner

import (
	"fmt"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

// tierCheck is the compaction trigger of one partition, from its counters:
// over exactly when the tier rule (jobs.Tiers.Select) would pick a merge.
func tierCheck(c Counters, set thresholds.Effective) Check {
	t := jobs.TiersOf(set)
	if k := t.Full(c.Tiers); k >= 0 {
		return Check{Threshold: jobs.TierFanIn, Measured: int64(c.Tiers[k]), Limit: int64(t.MergeFiles()), Unit: "files",
			Over: true, Note: fmt.Sprintf("size tier %d (files of %s to %s) is full", k,
				thresholds.Size(t.Floor(k)), thresholds.Size(t.Floor(k-1)))}
	}
	return Check{Threshold: jobs.SmallFileCount, Measured: int64(c.SmallFiles), Limit: int64(set.SmallFileCount),
		Unit: "files", Over: c.SmallFiles >= set.SmallFileCount && c.SmallFiles >= t.CapFiles(),
		Note: fmt.Sprintf("files below %s", thresholds.Size(set.SmallFileSize))}
}
