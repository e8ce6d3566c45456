package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/thresholds"
)

// JobKind names what a job does.
type JobKind string

// Job kinds. A table's due jobs run one at a time, in this order
// (evaluate.go; docs/design.md#job-order): metadata over its bounds first
// (snapshot_count or manifest_count reached: expiry, then manifest
// rewrite); otherwise compaction, then equality-delete conversion, then
// position-delete rewrite, then sort,
// then the table-wide jobs: expiry, the deferred deletion of what expiry
// unlinked, manifest rewrite, orphan cleanup.
const (
	// KindCompact is bin-pack compaction of whole partitions.
	KindCompact JobKind = "compact"
	// KindConvertEqualityDeletes replaces a partition's equality delete
	// files by position deletes naming the rows they delete, reading only
	// the equality columns of the data files they apply to and rewriting
	// none (Amoro's minor optimizing).
	KindConvertEqualityDeletes JobKind = "convert_equality_deletes"
	// KindRewritePositionDeletes merges a partition's position-delete
	// files into files near the delete target size, dropping entries for
	// data files no longer live, without touching data files (Spark's
	// rewrite_position_delete_files).
	KindRewritePositionDeletes JobKind = "rewrite_position_deletes"
	// KindSort rewrites whole partitions with their rows in the table's
	// sort or z-order (Spark's rewrite_data_files with strategy sort), in
	// groups of at most max_group_size input bytes.
	KindSort JobKind = "sort"
	// KindExpireSnapshots expires snapshots past retention (never a
	// branch or tag head) and records the files no remaining snapshot
	// references for deletion once min_reader_margin has passed.
	KindExpireSnapshots JobKind = "expire_snapshots"
	// KindRewriteManifests merges the table's data manifests, clustered
	// by partition.
	KindRewriteManifests JobKind = "rewrite_manifests"
	// KindDeleteExpiredFiles is the later pass of an expiry: once
	// min_reader_margin has passed since the expiry, it deletes the files
	// the expiry unlinked, checking each against the history again.
	KindDeleteExpiredFiles JobKind = "delete_expired_files"
	// KindRemoveOrphans deletes (or, in a dry run, reports) files under the
	// table's location that no snapshot references and that are older than
	// the orphan margin.
	KindRemoveOrphans JobKind = "remove_orphans"
)

// Kinds lists every job kind, in the order a table's jobs run when all are
// due with nothing over its bound: the one list Explain, the demo summary
// and the Spark routing test (which keeps thresholds.SparkKinds in step) go
// by, so a new kind cannot be left out of them (kinds_test.go checks every
// Kind constant is here).
func Kinds() []JobKind {
	return []JobKind{KindCompact, KindConvertEqualityDeletes, KindRewritePositionDeletes, KindSort, KindExpireSnapshots, KindDeleteExpiredFiles,
		KindRewriteManifests, KindRemoveOrphans}
}

// Where an orphan-cleanup job gets its candidates.
const (
	// OrphansFromTracking: the data files bucket notifications reported
	// that no snapshot came to reference (no listing).
	OrphansFromTracking = "tracked"
	// OrphansFromListing: a full listing of the table's location.
	OrphansFromListing = "listing"
)

// tableWide is the Reason.Partition of thresholds that concern the whole
// table.
const tableWide = "(table)"

// SortSnapshotProperty is set, to the sort order, in the summary of the
// snapshots sort and z-order rewrites commit: the data files they add are
// sorted, and the planner counts them so (restarts included).
const SortSnapshotProperty = "reactor.sort-order"

// SnapshotJobProperty is set in the summary of every snapshot reactor
// commits, with the job id as its value. The planner recognises reactor's
// own snapshots by it, so they never count as a write (no quiet period, no
// new job: reactor cannot trigger itself into a loop).
const SnapshotJobProperty = "reactor.job-id"

// Priority is how soon a due job must start: the executor's pool hands its
// slots to urgent jobs before background ones. The planner decides it when
// it schedules the job, from the kind and the threshold that made the job
// due (the pool does not re-derive it).
type Priority uint8

const (
	// PriorityBackground: maintenance on a cadence of hours or days
	// (age-based expiry, deletion of expired files, orphan cleanup, sort
	// and z-order rewrites, the quiet merge of a partition nobody writes),
	// which a few minutes' wait does not hurt. The
	// zero value: a job nobody ranked waits behind the urgent ones.
	PriorityBackground Priority = iota
	// PriorityUrgent: the jobs that answer writes (compaction,
	// position-delete rewrites) and the metadata jobs that gate a table's
	// compaction when its history or manifest list is over its bound.
	PriorityUrgent
)

// String is the priority's metric label (reactor_job_queue's class).
func (p Priority) String() string {
	if p == PriorityUrgent {
		return "urgent"
	}
	return "background"
}

// priorityOf is the priority of a job of kind made due by reasons: the
// kind's, raised for an expiry at the snapshot-count bound (the history is
// over its bound, and every commit reads and rewrites it, so the expiry
// comes before data work). The planner decides it here, once, for the jobs
// it schedules and the ones it explains.
func priorityOf(kind JobKind, reasons []Reason) Priority {
	switch kind {
	case KindCompact:
		// A quiet merge answers no write: it waits behind the jobs that
		// do (a compaction with any other reason is urgent).
		for _, r := range reasons {
			if r.Threshold != quietThreshold {
				return PriorityUrgent
			}
		}
		if len(reasons) == 0 {
			return PriorityUrgent
		}
		return PriorityBackground
	case KindConvertEqualityDeletes, KindRewritePositionDeletes, KindRewriteManifests:
		return PriorityUrgent
	case KindExpireSnapshots:
		for _, r := range reasons {
			if r.Threshold == "snapshot_count" {
				return PriorityUrgent
			}
		}
	}
	return PriorityBackground
}

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
	// has been quiet for compact_when_quiet_after (see QuietMerge).
	Quiet bool
}

// Reason records why a partition was scheduled: which threshold, the
// measured value and the limit it reached.
type Reason struct {
	Partition string `json:"partition"`
	Threshold string `json:"threshold"`
	Measured  int64  `json:"measured"`
	Limit     int64  `json:"limit"`
	// Note explains an exception, such as compacting a partition that is
	// still being written.
	Note string `json:"note,omitempty"`
}

// String says the reason in words, for logs, `reactor plan` and the status
// pages: "category=a: 12 small files, threshold 10 (files below 192KiB)".
// The fields stay as they are in job events, for machines.
func (r Reason) String() string {
	s := r.measure()
	if r.Partition != "" && r.Partition != tableWide {
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
	case "manual":
		return "manual run"
	case "small_file_count":
		return fmt.Sprintf("%s, threshold %d", plural(m, "small file"), l)
	case "tier_fan_in":
		return fmt.Sprintf("%s in one size tier, tier_fan_in %d", plural(m, "file"), l)
	case "delete_file_ratio":
		return fmt.Sprintf("delete files %d%% of the data files, threshold %d%%", m, l)
	case "deleted_row_ratio":
		return fmt.Sprintf("%d%% of rows deleted, threshold %d%%", m, l)
	case "equality_delete_file_count":
		return fmt.Sprintf("%s, threshold %d", plural(m, "equality delete file"), l)
	case "deletion_vector_rules":
		return plural(m, "delete file") + " against the format v3 rules"
	case "manifest_count":
		return fmt.Sprintf("%s, threshold %d", plural(m, "data manifest"), l)
	case "snapshot_count":
		return fmt.Sprintf("%s, threshold %d", plural(m, "snapshot"), l)
	case "snapshot_max_age":
		return fmt.Sprintf("snapshots older than snapshot_max_age %s", seconds(l))
	case "compact_when_quiet_after":
		return fmt.Sprintf("quiet merge, compact_when_quiet_after %s", seconds(l))
	case "sort_quiet_period":
		return fmt.Sprintf("quiet for %s, sort_quiet_period %s", seconds(m), seconds(l))
	case "min_reader_margin":
		return fmt.Sprintf("files unlinked %s ago, min_reader_margin %s", seconds(m), seconds(l))
	case "orphan_listing_interval":
		return fmt.Sprintf("last listing %s ago, orphan_listing_interval %s", seconds(m), seconds(l))
	case "orphan_margin":
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

// Job is one unit of work for the executor.
type Job struct {
	ID          string
	Kind        JobKind
	Table       table.Identifier
	TableName   string
	Partitions  []Partition
	Reasons     []Reason
	Settings    thresholds.Effective
	ScheduledAt time.Time
	// Priority orders the job among those waiting for the executor's
	// slots (see Priority).
	Priority Priority
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

// Outcome is how a job ended, as reported back to the planner.
type Outcome int

const (
	// Succeeded: the job committed; Table is the committed table.
	Succeeded Outcome = iota
	// Noop: nothing worth rewriting was found; the partition is left alone
	// until it is written again.
	Noop
	// GaveUp: every commit attempt conflicted within the retry budget; the
	// partition gets the longer conflict cool-down.
	GaveUp
	// Failed: any other error; the partition gets the normal cool-down.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Noop:
		return "noop"
	case GaveUp:
		return "gave_up"
	default:
		return "failed"
	}
}

// Result is what the executor reports for a finished job.
type Result struct {
	Outcome Outcome
	// Table is the table after the job's last commit (nil if none).
	Table *table.Table
	Err   error
	// Settled lists tracked locations the job dealt with (deleted, found
	// referenced or gone, or refused for good): the planner stops tracking
	// them.
	Settled []string
	// Deferred are tracked locations the object store says are younger
	// than the orphan margin, with the LastModified it reported: the
	// planner keeps tracking them from that time instead of the
	// notification's eventTime.
	Deferred map[string]time.Time
	// PendingDeletes are the batches of files an expiry unlinked, due for
	// deletion once min_reader_margin has passed.
	PendingDeletes []deletions.Ref
	// NothingToDo names the job's partitions (by key) where it found
	// nothing whose rewrite would change the partition, with why: the
	// planner settles the job's kind for them until they are written
	// again, whatever the job's outcome elsewhere.
	NothingToDo map[string]string
	// OwnSnapshots are snapshots the job committed without reactor's
	// snapshot properties (Spark commits a job's procedure call, and its
	// summary cannot carry reactor.job-id): the planner treats them as its
	// own (not a write; sorted files for a sort job) for as long as it
	// runs. After a restart they read as another writer's once.
	OwnSnapshots []int64
}
