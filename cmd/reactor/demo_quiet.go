package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

// demoQuietAfter is the demo's compact_when_quiet_after (built-in 1m): the
// tier rule leaves up to small_file_count - 1 small files per partition
// while the writer runs; this long after it stops, each partition with
// files a merge would reduce is merged once, so the demo ends at the ideal
// file count within its settle limit.
const demoQuietAfter = 3 * time.Second

func demoQuietSetting() *thresholds.DurationOrOff {
	v := thresholds.DurationOrOff(demoQuietAfter)
	return &v
}

// quietPending reports whether the quiet merge still has work in a
// partition (so the demo has not settled yet).
func (d *demo) quietPending(pc planner.PartitionCounters) bool {
	_, _, reduces := planner.QuietMerge(pc.Counters, d.th.For(d.tableName(), nil))
	return reduces
}

// atWriterStop measures the table when the writer stops: what the tier
// rule left, before the quiet merge.
func (d *demo) atWriterStop(ctx context.Context) observation {
	o, err := d.observe(ctx, true)
	if err != nil {
		return observation{}
	}
	return o
}

// quietSummary is the summary's line on the quiet merge: the table when the
// writer stopped against the table settled.
func quietSummary(out io.Writer, stop, after observation) {
	if !stop.scanned {
		return
	}
	fmt.Fprintf(out, "writer stopped: %d data files (ideal %d), full scan %.1fx the compacted copy; settled, after the tier rule and the quiet merge\n"+
		"                 (compact_when_quiet_after %s, built-in 1m): %d data files (ideal %d), %.1fx\n",
		stop.table.DataFiles, stop.table.IdealFiles, stop.scan.Ratio(), demoQuietAfter, after.table.DataFiles, after.table.IdealFiles, after.scan.Ratio())
}
