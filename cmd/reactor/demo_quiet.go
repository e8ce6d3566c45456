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

// atWriterStop counts the table's files when the writer stops, before the
// tier rule's last merges and the quiet merge. No scan: the live printer
// shares the probe, and a scan of a table still being compacted says little.
func (d *demo) atWriterStop(ctx context.Context) observation {
	o, err := d.observe(ctx, false)
	if err != nil {
		return observation{}
	}
	return o
}

// quietSummary is the summary's line on the quiet merge: the files when
// the writer stopped against the table settled.
func quietSummary(out io.Writer, stop, after observation) {
	if stop.table.DataFiles == 0 {
		return
	}
	fmt.Fprintf(out, "writer stopped: %d data files (ideal %d); settled, after the tier rule and the quiet merge (compact_when_quiet_after %s,\n"+
		"                built-in 1m): %d data files (ideal %d), full scan %.1fx the compacted copy\n",
		stop.table.DataFiles, stop.table.IdealFiles, demoQuietAfter, after.table.DataFiles, after.table.IdealFiles, after.scan.Ratio())
}
