package jobs

import (
	"strings"
	"time"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// Where an orphan-cleanup job gets its candidates.
const (
	// OrphansFromTracking: the data files bucket notifications reported
	// that no snapshot came to reference (no listing).
	OrphansFromTracking = "tracked"
	// OrphansFromListing: a full listing of the table's location.
	OrphansFromListing = "listing"
)

// SortSnapshotProperty is set, to the sort order, in the summary of the
// snapshots sort and z-order rewrites commit: the data files they add are
// sorted, and the planner counts them so (restarts included).
const SortSnapshotProperty = "reactor.sort-order"

// SnapshotJobProperty is set in the summary of every snapshot reactor
// commits, with the job id as its value. The planner recognises reactor's
// own snapshots by it, so they never count as a write (no quiet period, no
// new job: reactor cannot trigger itself into a loop).
const SnapshotJobProperty = "reactor.job-id"

// Partition identifies one partition of one spec.
type Partition struct {
	// Key is human-readable and unique within the table: "category=books",
	// prefixed with "spec=N/" for partitions of an older spec.
	Key    string
	SpecID int32
	// Values maps partition field id to the partition value, as in
	// iceberg.DataFile.Partition().
	Values map[int]any
	// ApplyDeletes asks compaction to rewrite every data file of the
	// partition that has a delete file applying to it, whatever its size,
	// so the deletes can be dropped (a delete-ratio trigger).
	ApplyDeletes bool
	// Quiet asks compaction to merge every small file of the partition
	// into target-sized files, not the tier rule's pick: the partition
	// has been quiet for compact_when_quiet_after (planner.QuietMerge).
	Quiet bool
}

// OrphanCandidate is a tracked file a remove_orphans job re-verifies
// before it deletes it: its location, size and when its notification said
// it was created.
type OrphanCandidate struct {
	Location string
	Size     int64
	Created  time.Time
}

// Job is one unit of work for the executor.
type Job struct {
	ID   string
	Kind jobkind.Kind
	// Table is the job's table: its identifier and its name.
	Table       tablename.Name
	Partitions  []Partition
	Reasons     []Reason
	Settings    thresholds.Effective
	ScheduledAt time.Time
	// Priority orders the job among those waiting for the executor's
	// slots (see jobkind.Priority).
	Priority jobkind.Priority
	// BaseSnapshotID is the snapshot the planner's counters described when it
	// scheduled the job; the executor plans against the table's current one.
	BaseSnapshotID int64
	// ExpireOlderThan and ExpireRetainLast are the retention of an
	// expire_snapshots job: snapshots older than the horizon beyond the
	// newest ExpireRetainLast go (snapshot_max_age and retain_last, or
	// under snapshot_count the newest half kept).
	ExpireOlderThan  time.Duration
	ExpireRetainLast int
	// OrphanSource and OrphanCandidates describe a remove_orphans job; the
	// candidates (tracked source only) are re-verified by the executor.
	OrphanSource     string
	OrphanCandidates []OrphanCandidate
	// PendingDeletes are the batches of unlinked files a
	// delete_expired_files job deletes (all of them due).
	PendingDeletes []deletions.Ref
	// SortOrder is the order a sort job writes in (Spark syntax), resolved
	// when scheduled: the configured sort_order, else the table's default.
	SortOrder string
	// DryRun jobs (one-shot commands only) plan and count what they would
	// do and change nothing: no file written, deleted or committed.
	DryRun bool
	// InputFiles and InputBytes are the job's input as the planner counted
	// it when it scheduled the job: the data and delete files of its
	// partitions, or of the whole table for a job that names none
	// (expiry, manifests, orphans). They decide where the job runs
	// (reactor or Spark); the executor plans from the table itself.
	InputFiles int
	InputBytes int64
}

// PartitionKeys lists the job's partition keys (for logs).
func (j Job) PartitionKeys() []string {
	keys := make([]string, len(j.Partitions))
	for i, p := range j.Partitions {
		keys[i] = p.Key
	}
	return keys
}

// ReasonText renders the reasons on one line (for logs).
func (j Job) ReasonText() string {
	parts := make([]string, len(j.Reasons))
	for i, r := range j.Reasons {
		parts[i] = r.String()
	}
	return strings.Join(parts, "; ")
}
