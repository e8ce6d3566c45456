package planner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

// snapshotSummary is what expiry scheduling needs to know of a table's
// history: snapshot times, newest first, and which are branch or tag heads;
// and the ids of every snapshot in the metadata, so an event naming one of
// them is known to be covered without asking the catalog. It costs 17 bytes
// a snapshot (a table at the snapshot_count bound of 500: 8.5 KB).
type snapshotSummary struct {
	timesMs  []int64 // commit times (Unix ms), newest first
	refHeads []bool  // parallel to timesMs
	ids      []int64 // every snapshot id, ascending
}

func summarizeSnapshots(meta table.Metadata) snapshotSummary {
	heads := map[int64]bool{}
	for _, ref := range meta.Refs() {
		heads[ref.SnapshotID] = true
	}
	snaps := meta.Snapshots()
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].TimestampMs > snaps[j].TimestampMs })
	s := snapshotSummary{timesMs: make([]int64, len(snaps)), refHeads: make([]bool, len(snaps)), ids: make([]int64, len(snaps))}
	for i, snap := range snaps {
		s.timesMs[i] = snap.TimestampMs
		s.refHeads[i] = heads[snap.SnapshotID]
		s.ids[i] = snap.SnapshotID
	}
	slices.Sort(s.ids)
	return s
}

// count is the number of snapshots in the metadata.
func (s snapshotSummary) count() int { return len(s.timesMs) }

// at is the commit time of the i-th newest snapshot.
func (s snapshotSummary) at(i int) time.Time { return time.UnixMilli(s.timesMs[i]) }

// has reports whether the metadata holds the snapshot.
func (s snapshotSummary) has(id int64) bool {
	_, ok := slices.BinarySearch(s.ids, id)
	return ok
}

// oldest is the oldest snapshot's commit time (zero without snapshots).
func (s snapshotSummary) oldest() time.Time {
	if len(s.timesMs) == 0 {
		return time.Time{}
	}
	return s.at(len(s.timesMs) - 1)
}

// expiry decides whether an expire_snapshots job is due now, with which
// horizon and how many of the newest snapshots it keeps; when it is not,
// next is when it will be (zero: not foreseeable, it takes more
// snapshots). Two rules bound the history: snapshot_max_age (older
// snapshots beyond retain_last go) and snapshot_count (a table that
// reaches it keeps only the newest half, so a streaming table's metadata
// stays bounded however fast it commits). Neither waits for
// min_reader_margin: that margin protects files, not snapshots — expiry
// unlinks files and a later pass deletes them once the margin has passed
// since they left the table. The answer is an estimate for scheduling
// (iceberg-go resolves retention per branch).
func (s snapshotSummary) expiry(now time.Time, set thresholds.Effective) (due bool, reason jobs.Reason, olderThan time.Duration, retainLast int, next time.Time) {
	retainLast = max(set.RetainLast, 1)
	if n := s.count(); n >= set.SnapshotCount && set.SnapshotCount > 0 {
		keep := max(retainLast, set.SnapshotCount/2)
		if n > keep {
			// Everything older than the keep-th newest goes.
			olderThan = max(now.Sub(s.at(keep-1)), 0)
			return true, jobs.Reason{Partition: jobs.TableWide, Threshold: jobs.SnapshotCount, Measured: int64(n), Limit: int64(set.SnapshotCount),
				Note: fmt.Sprintf("keep the newest %d of %d snapshots (snapshot_count %d, retain_last %d)",
					keep, n, set.SnapshotCount, set.RetainLast)}, olderThan, keep, time.Time{}
		}
	}
	olderThan = set.SnapshotMaxAge
	horizon := now.Add(-olderThan)
	// The oldest snapshot past retain_last that is no ref head decides.
	for i := s.count() - 1; i >= retainLast; i-- {
		if s.refHeads[i] {
			continue
		}
		if s.at(i).Before(horizon) {
			return true, jobs.Reason{Partition: jobs.TableWide, Threshold: jobs.SnapshotMaxAge,
					Measured: int64(now.Sub(s.at(i)) / time.Second), Limit: int64(olderThan / time.Second),
					Note: fmt.Sprintf("oldest expirable snapshot is %s old; snapshot_max_age %s, retain_last %d",
						now.Sub(s.at(i)).Round(time.Second), olderThan, set.RetainLast)},
				olderThan, retainLast, time.Time{}
		}
		return false, jobs.Reason{}, 0, 0, s.at(i).Add(olderThan)
	}
	return false, jobs.Reason{}, 0, 0, time.Time{}
}
