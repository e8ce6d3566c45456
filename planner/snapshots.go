package planner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
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

// expiryPlan is what the history says of expire_snapshots at a moment:
// whether it is due, with which horizon and how many of the newest
// snapshots it keeps; when it is not, next is when it will be (zero: not
// foreseeable, it takes more snapshots).
type expiryPlan struct {
	due        bool
	reason     jobs.Reason
	olderThan  time.Duration
	retainLast int
	next       time.Time
	// decisive is the commit time of the snapshot the age rule measures:
	// the oldest one past retain_last that is no branch or tag head (zero:
	// none, retain_last and the heads hold every snapshot).
	decisive time.Time
}

// expiry decides whether an expire_snapshots job is due now. Two rules
// bound the history: snapshot_max_age (older snapshots beyond retain_last
// go) and snapshot_count (a table that reaches it keeps only the newest
// half, so a streaming table's metadata stays bounded however fast it
// commits). Neither waits for min_reader_margin: that margin protects
// files, not snapshots — expiry unlinks files and a later pass deletes
// them once the margin has passed since they left the table. The answer
// is an estimate for scheduling (iceberg-go resolves retention per branch).
func (s snapshotSummary) expiry(now time.Time, set thresholds.Effective) expiryPlan {
	var e expiryPlan
	retainLast := max(set.RetainLast, 1)
	// The oldest snapshot past retain_last that is no ref head decides
	// the age rule.
	for i := s.count() - 1; i >= retainLast; i-- {
		if !s.refHeads[i] {
			e.decisive = s.at(i)
			break
		}
	}
	if n := s.count(); n >= set.SnapshotCount && set.SnapshotCount > 0 {
		keep := max(retainLast, set.SnapshotCount/2)
		if n > keep {
			// Everything older than the keep-th newest goes.
			e.due, e.olderThan, e.retainLast = true, max(now.Sub(s.at(keep-1)), 0), keep
			e.reason = jobs.Reason{Partition: jobs.TableWide, Threshold: jobs.SnapshotCount, Measured: int64(n), Limit: int64(set.SnapshotCount),
				Note: fmt.Sprintf("keep the newest %d of %d snapshots (snapshot_count %d, retain_last %d)",
					keep, n, set.SnapshotCount, set.RetainLast)}
			return e
		}
	}
	if e.decisive.IsZero() {
		return e
	}
	olderThan := set.SnapshotMaxAge
	if !e.decisive.Before(now.Add(-olderThan)) {
		e.next = e.decisive.Add(olderThan)
		return e
	}
	e.due, e.olderThan, e.retainLast = true, olderThan, retainLast
	e.reason = jobs.Reason{Partition: jobs.TableWide, Threshold: jobs.SnapshotMaxAge,
		Measured: int64(now.Sub(e.decisive) / time.Second), Limit: int64(olderThan / time.Second),
		Note: fmt.Sprintf("oldest expirable snapshot is %s old; snapshot_max_age %s, retain_last %d",
			now.Sub(e.decisive).Round(time.Second), olderThan, set.RetainLast)}
	return e
}

// appendsOnly reports whether every snapshot of chain says it only added
// data files (Iceberg's "append": files added, none removed), as the
// commits of a streaming writer do.
func appendsOnly(chain []*table.Snapshot) bool {
	for _, s := range chain {
		if s.Summary == nil || s.Summary.Operation != table.OpAppend {
			return false
		}
	}
	return true
}

// advanceAppends applies a run of append snapshots (chain, newest first)
// from the newest one's manifest list alone, where the walk reads one
// list per snapshot: a burst of streaming commits after a restart or a
// NATS outage is dozens of snapshots a table (BENCHMARKS.md, section 27).
// It is sound because an append removes no manifest and no file: every
// manifest the run wrote is still listed, or its live entries were carried,
// with the snapshot that added them, into a manifest a later append of the
// run merged (a manifest a snapshot wrote holds only entries of that
// snapshot or older). Entries are gathered before any is applied; a
// deleted entry of the run, which an append cannot write (a writer that
// mislabelled its commit), returns applied false with nothing changed, and
// the caller walks snapshot by snapshot.
func (tc *tableCounters) advanceAppends(fs iceio.IO, keys *jobs.Keyer, chain []*table.Snapshot, st *updateStats, sz fileSizes) (applied bool, err error) {
	run := make(map[int64]int, len(chain))
	for i, s := range chain {
		run[s.SnapshotID] = i
	}
	manifests, err := tc.manifests.ManifestList(fs, chain[0])
	if err != nil {
		return false, fmt.Errorf("read manifest list of snapshot %d: %w", chain[0].SnapshotID, err)
	}
	bySnapshot := make([][]iceberg.DataFile, len(chain))
	read := 0
	for _, m := range manifests {
		if _, in := run[m.SnapshotID()]; !in {
			continue
		}
		read++
		entries, err := tc.manifests.Fetch(fs, m, false)
		if err != nil {
			return false, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		for _, entry := range entries {
			i, in := run[entry.SnapshotID()]
			if !in {
				continue
			}
			if entry.Status() == iceberg.EntryStatusDELETED {
				return false, nil
			}
			bySnapshot[i] = append(bySnapshot[i], entry.DataFile())
		}
	}
	tc.dataManifests = countDataManifests(manifests)
	st.manifestsRead += read
	st.listsRead++
	for i := len(chain) - 1; i >= 0; i-- {
		snap := chain[i]
		own := tc.own(snap)
		if !own {
			st.ownSnapshotsOnly = false
		}
		st.snapshots++
		written := time.UnixMilli(snap.TimestampMs)
		for _, df := range bySnapshot[i] {
			tc.addFile(st, keys, snap, own, written, df, sz)
		}
	}
	return true, nil
}
