package planner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/thresholds"
)

// Check is one threshold measured against its limit.
type Check struct {
	Threshold string `json:"threshold"`
	Measured  int64  `json:"measured"`
	Limit     int64  `json:"limit"`
	// Unit says how to read Measured and Limit: files, manifests,
	// snapshots or seconds.
	Unit string `json:"unit"`
	// Over is true when the measured value reached the limit.
	Over bool   `json:"over"`
	Note string `json:"note,omitempty"`
}

// PartitionPlan is what the planner sees in one partition.
type PartitionPlan struct {
	Key      string   `json:"partition"`
	Counters Counters `json:"counters"`
	Checks   []Check  `json:"checks"`
	// Due is true when the partition would be compacted now; Wait says
	// why one over its threshold would not be yet.
	Due  bool   `json:"due"`
	Wait string `json:"wait,omitempty"`
}

// Plan is `reactor plan TABLE`: every threshold's measured value and limit
// for the table's current snapshot, and the jobs a fresh reactor would
// schedule for it, in the order it would run them.
type Plan struct {
	Table      string               `json:"table"`
	SnapshotID int64                `json:"snapshot_id"`
	Settings   thresholds.Effective `json:"settings"`
	Partitions []PartitionPlan      `json:"partitions"`
	TableWide  []Check              `json:"table_checks"`
	Jobs       []PlannedJob         `json:"jobs"`
}

// PlannedJob is a job Explain found due.
type PlannedJob struct {
	Kind       JobKind  `json:"kind"`
	Partitions []string `json:"partitions,omitempty"`
	Reasons    []Reason `json:"reasons"`
}

// smallFileCheck is the compaction trigger of one partition; the scheduler
// and Explain share it so that plan shows exactly what run acts on.
func smallFileCheck(c Counters, set thresholds.Effective) Check {
	return Check{Threshold: "small_file_count", Measured: int64(c.SmallFiles), Limit: int64(set.SmallFileCount),
		Unit: "files", Over: c.SmallFiles >= set.SmallFileCount,
		Note: fmt.Sprintf("files below %s", thresholds.Size(set.SmallFileSize))}
}

// Explain reads tbl's current snapshot (every live manifest once) and
// reports, without scheduling anything, what the planner measures and which
// jobs it would schedule now. Quiet periods count from the partitions' last
// writes; cool-downs do not apply (a fresh reactor has none). Orphan
// cleanup is not assessed: it needs a listing (reactor orphans --dry-run).
func Explain(ctx context.Context, tbl *table.Table, cfg *thresholds.Config, now time.Time) (Plan, error) {
	name := strings.Join(tbl.Identifier(), ".")
	set := cfg.For(name, tbl.Properties())
	var tc tableCounters
	if _, err := tc.advance(ctx, tbl, sizesOf(set)); err != nil {
		return Plan{}, fmt.Errorf("read %s: %w", name, err)
	}
	plan := Plan{Table: name, SnapshotID: tc.snapshotID, Settings: set}
	var compact PlannedJob
	for _, ps := range tc.sortedPartitions() {
		pp := PartitionPlan{Key: ps.Key, Counters: ps.Counters, Checks: []Check{smallFileCheck(ps.Counters, set)}}
		if pp.Checks[0].Over {
			if quietEnd := ps.LastWrite.Add(set.QuietPeriod); now.Before(quietEnd) {
				pp.Wait = fmt.Sprintf("written %s ago; waits for a quiet period of %s (at most max_quiet_wait %s)",
					now.Sub(ps.LastWrite).Round(time.Millisecond), set.QuietPeriod, set.MaxQuietWait)
			} else {
				pp.Due = true
				c := pp.Checks[0]
				compact.Partitions = append(compact.Partitions, ps.Key)
				compact.Reasons = append(compact.Reasons, Reason{Partition: ps.Key, Threshold: c.Threshold, Measured: c.Measured, Limit: c.Limit})
			}
		}
		plan.Partitions = append(plan.Partitions, pp)
	}
	if len(compact.Partitions) > 0 {
		compact.Kind = KindCompact
		plan.Jobs = append(plan.Jobs, compact)
	}

	snaps := summarizeSnapshots(tbl.Metadata())
	due, reason, olderThan, next := snaps.expiry(now, set)
	ageCheck := Check{Threshold: "snapshot_max_age", Limit: int64(max(set.SnapshotMaxAge, set.MinReaderMargin) / time.Second), Unit: "seconds"}
	if n := len(snaps.times); n > 0 {
		ageCheck.Measured = int64(now.Sub(snaps.times[n-1]) / time.Second)
	}
	ageCheck.Over = due && reason.Threshold == "snapshot_max_age"
	countCheck := Check{Threshold: "snapshot_count", Measured: int64(len(snaps.times)), Limit: int64(set.SnapshotCount),
		Unit: "snapshots", Over: due && reason.Threshold == "snapshot_count"}
	switch {
	case due:
		note := fmt.Sprintf("expire snapshots older than %s (retain_last %d)", olderThan, set.RetainLast)
		ageCheck.Note, countCheck.Note = note, note
		plan.Jobs = append(plan.Jobs, PlannedJob{Kind: KindExpireSnapshots, Reasons: []Reason{reason}})
	case !next.IsZero():
		ageCheck.Note = fmt.Sprintf("next snapshot becomes expirable in %s", next.Sub(now).Round(time.Second))
	default:
		ageCheck.Note = fmt.Sprintf("nothing to expire beyond retain_last %d and branch/tag heads", set.RetainLast)
	}
	manifests := Check{Threshold: "manifest_count", Measured: int64(tc.dataManifests), Limit: int64(set.ManifestCount),
		Unit: "manifests", Over: tc.dataManifests >= set.ManifestCount}
	plan.TableWide = append(plan.TableWide, ageCheck, countCheck, manifests, Check{Threshold: "orphan_margin",
		Limit: int64(set.OrphanMargin / time.Second), Unit: "seconds",
		Note: fmt.Sprintf("not assessed here: needs a listing (reactor orphans --dry-run); run lists every %s, dry run: %v",
			set.OrphanListingInterval, !set.OrphanDelete)})
	if manifests.Over {
		plan.Jobs = append(plan.Jobs, PlannedJob{Kind: KindRewriteManifests, Reasons: []Reason{{Partition: tableWide,
			Threshold: manifests.Threshold, Measured: manifests.Measured, Limit: manifests.Limit}}})
	}
	return plan, nil
}

// sortedPartitions lists the partitions by key.
func (tc *tableCounters) sortedPartitions() []*partitionState {
	out := make([]*partitionState, 0, len(tc.partitions))
	for _, ps := range tc.partitions {
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
