package planner

import (
	"fmt"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/thresholds"
)

// snapshotSummary is what expiry scheduling needs to know of a table's
// history: snapshot times, newest first, and which are branch or tag heads.
type snapshotSummary struct {
	times    []time.Time // newest first
	refHeads []bool      // parallel to times
}

func summarizeSnapshots(meta table.Metadata) snapshotSummary {
	heads := map[int64]bool{}
	for _, ref := range meta.Refs() {
		heads[ref.SnapshotID] = true
	}
	snaps := meta.Snapshots()
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].TimestampMs > snaps[j].TimestampMs })
	s := snapshotSummary{times: make([]time.Time, len(snaps)), refHeads: make([]bool, len(snaps))}
	for i, snap := range snaps {
		s.times[i] = time.UnixMilli(snap.TimestampMs)
		s.refHeads[i] = heads[snap.SnapshotID]
	}
	return s
}

// oldest is the oldest snapshot's commit time (zero without snapshots).
func (s snapshotSummary) oldest() time.Time {
	if len(s.times) == 0 {
		return time.Time{}
	}
	return s.times[len(s.times)-1]
}

// expiry decides whether an expire_snapshots job is due now and with which
// horizon; when it is not, next is when it will be (zero: not foreseeable,
// it takes more snapshots). Its answer is an estimate for scheduling —
// iceberg-go resolves retention per branch — and the executor enforces
// the min_reader_margin floor again on what it actually removes.
func (s snapshotSummary) expiry(now time.Time, set thresholds.Effective) (due bool, reason Reason, olderThan time.Duration, next time.Time) {
	olderThan = max(set.SnapshotMaxAge, set.MinReaderMargin)
	threshold, measured, limit := "snapshot_max_age", int64(0), int64(olderThan/time.Second)
	if len(s.times) >= set.SnapshotCount {
		olderThan = set.MinReaderMargin
		threshold, measured, limit = "snapshot_count", int64(len(s.times)), int64(set.SnapshotCount)
	}
	horizon := now.Add(-olderThan)
	// The oldest snapshot past retain_last that is no ref head decides.
	for i := len(s.times) - 1; i >= set.RetainLast; i-- {
		if s.refHeads[i] {
			continue
		}
		if s.times[i].Before(horizon) {
			if threshold == "snapshot_max_age" {
				measured = int64(now.Sub(s.times[i]) / time.Second)
			}
			return true, Reason{Partition: tableWide, Threshold: threshold, Measured: measured, Limit: limit,
				Note: fmt.Sprintf("oldest expirable snapshot is %s old; horizon %s, min_reader_margin %s, retain_last %d",
					now.Sub(s.times[i]).Round(time.Second), olderThan, set.MinReaderMargin, set.RetainLast)}, olderThan, time.Time{}
		}
		return false, Reason{}, 0, s.times[i].Add(olderThan)
	}
	return false, Reason{}, 0, time.Time{}
}
