package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/icereactor/reactor/jobkind"
)

// Threshold names the rule that made a job due, as job events, logs,
// `reactor plan` and the status pages spell it: a thresholds setting
// (small_file_count, snapshot_max_age, ...) or a rule of its own
// (deletion_vector_rules, manual).
type Threshold string

// The thresholds a Reason names. The names are on the wire (job events'
// reasons) and must stay as they are.
const (
	SmallFileCount          Threshold = "small_file_count"
	TierFanIn               Threshold = "tier_fan_in"
	DeleteFileRatio         Threshold = "delete_file_ratio"
	DeletedRowRatio         Threshold = "deleted_row_ratio"
	EqualityDeleteFileCount Threshold = "equality_delete_file_count"
	// DeletionVectorRules: a format v3 table holds Parquet position
	// deletes, two vectors for one data file or a vector naming a data
	// file that is gone.
	DeletionVectorRules   Threshold = "deletion_vector_rules"
	ManifestCount         Threshold = "manifest_count"
	SnapshotCount         Threshold = "snapshot_count"
	SnapshotMaxAge        Threshold = "snapshot_max_age"
	CompactWhenQuietAfter Threshold = "compact_when_quiet_after"
	SortQuietPeriod       Threshold = "sort_quiet_period"
	MinReaderMargin       Threshold = "min_reader_margin"
	OrphanListingInterval Threshold = "orphan_listing_interval"
	OrphanMargin          Threshold = "orphan_margin"
	// Manual: a one-shot command asked for the job.
	Manual Threshold = "manual"
)

// TableWide is the Reason.Partition of thresholds that concern the whole
// table.
const TableWide = "(table)"

// Reason records why a partition was scheduled: which threshold, the
// measured value and the limit it reached.
type Reason struct {
	Partition string    `json:"partition"`
	Threshold Threshold `json:"threshold"`
	Measured  int64     `json:"measured"`
	Limit     int64     `json:"limit"`
	// Note explains an exception, such as compacting a partition that is
	// still being written.
	Note string `json:"note,omitempty"`
}

// String says the reason in words, for logs, `reactor plan` and the status
// pages: "category=a: 12 small files, threshold 10 (files below 192KiB)".
// The fields stay as they are in job events, for machines.
func (r Reason) String() string {
	s := r.measure()
	if r.Partition != "" && r.Partition != TableWide {
		s = r.Partition + ": " + s
	}
	if r.Note != "" {
		s += " (" + r.Note + ")"
	}
	return s
}

// measure is the measured value against the limit, in the threshold's
// unit.
func (r Reason) measure() string {
	m, l := r.Measured, r.Limit
	switch r.Threshold {
	case Manual:
		return "manual run"
	case SmallFileCount:
		return fmt.Sprintf("%s, threshold %d", plural(m, "small file"), l)
	case TierFanIn:
		return fmt.Sprintf("%s in one size tier, tier_fan_in %d", plural(m, "file"), l)
	case DeleteFileRatio:
		return fmt.Sprintf("delete files %d%% of the data files, threshold %d%%", m, l)
	case DeletedRowRatio:
		return fmt.Sprintf("%d%% of rows deleted, threshold %d%%", m, l)
	case EqualityDeleteFileCount:
		return fmt.Sprintf("%s, threshold %d", plural(m, "equality delete file"), l)
	case DeletionVectorRules:
		return plural(m, "delete file") + " against the format v3 rules"
	case ManifestCount:
		return fmt.Sprintf("%s, threshold %d", plural(m, "data manifest"), l)
	case SnapshotCount:
		return fmt.Sprintf("%s, threshold %d", plural(m, "snapshot"), l)
	case SnapshotMaxAge:
		return fmt.Sprintf("snapshots older than snapshot_max_age %s", seconds(l))
	case CompactWhenQuietAfter:
		return fmt.Sprintf("quiet merge, compact_when_quiet_after %s", seconds(l))
	case SortQuietPeriod:
		return fmt.Sprintf("quiet for %s, sort_quiet_period %s", seconds(m), seconds(l))
	case MinReaderMargin:
		return fmt.Sprintf("files unlinked %s ago, min_reader_margin %s", seconds(m), seconds(l))
	case OrphanListingInterval:
		return fmt.Sprintf("last listing %s ago, orphan_listing_interval %s", seconds(m), seconds(l))
	case OrphanMargin:
		return fmt.Sprintf("tracked orphan candidates past orphan_margin %s", seconds(l))
	}
	return fmt.Sprintf("%s %d, limit %d", r.Threshold, m, l)
}

// plural is "1 file", "2 files".
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// seconds is a count of seconds as a short duration: 45s, 1m12s, 72h.
func seconds(n int64) string {
	s := (time.Duration(n) * time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// PriorityOf is the priority of a job of kind made due by reasons: the
// kind's base priority (jobkind), lowered for a compaction that is only a
// quiet merge (it answers no write: it waits behind the jobs that do) and
// raised for an expiry at the snapshot-count bound (the history is over
// its bound, and every commit reads and rewrites it, so the expiry comes
// before data work). The planner decides it once, for the jobs it
// schedules and the ones it explains.
func PriorityOf(kind jobkind.Kind, reasons []Reason) jobkind.Priority {
	switch kind {
	case jobkind.Compact:
		if len(reasons) == 0 {
			return jobkind.PriorityUrgent
		}
		for _, r := range reasons {
			if r.Threshold != CompactWhenQuietAfter {
				return jobkind.PriorityUrgent
			}
		}
		return jobkind.PriorityBackground
	case jobkind.ExpireSnapshots:
		for _, r := range reasons {
			if r.Threshold == SnapshotCount {
				return jobkind.PriorityUrgent
			}
		}
	}
	return kind.Priority()
}
