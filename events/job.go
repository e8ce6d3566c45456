package events

import "time"

// Job lifecycle phases, the last token but the table of a job event's
// subject.
const (
	JobScheduled = "scheduled"
	JobStarted   = "started"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
)

// DefaultJobSubjectPrefix is where job events go: PREFIX.<phase>.<table>,
// for example reactor.jobs.succeeded.db.events, so a subscriber can take
// every failure with reactor.jobs.failed.> or one table's whole history
// with reactor.jobs.*.db.events.
const DefaultJobSubjectPrefix = "reactor.jobs"

// JobSubject is the subject of a job event.
func JobSubject(prefix, phase, table string) string {
	return prefix + "." + phase + "." + table
}

// JobReason is one threshold a job was scheduled for.
type JobReason struct {
	Partition string `json:"partition"`
	Threshold string `json:"threshold"`
	Measured  int64  `json:"measured"`
	Limit     int64  `json:"limit"`
	Note      string `json:"note,omitempty"`
}

// JobEvent is what reactor publishes at each step of a job's life. The
// succeeded and failed events carry the counts the equivalent Spark
// procedure returns (rewritten_data_files_count, ...), under the same names.
type JobEvent struct {
	Phase      string      `json:"phase"`
	JobID      string      `json:"job_id"`
	Kind       string      `json:"kind"`
	Table      string      `json:"table"`
	Partitions []string    `json:"partitions,omitempty"`
	Reasons    []JobReason `json:"reasons,omitempty"`
	Time       time.Time   `json:"time"`
	// ScheduledAt is when the planner scheduled the job (every phase).
	ScheduledAt time.Time `json:"scheduled_at"`
	// BaseSnapshotID is the snapshot the planner saw when it scheduled.
	BaseSnapshotID int64 `json:"base_snapshot_id,omitempty"`

	// Backend is where the job runs or ran: local (reactor itself) or
	// spark (a Spark cluster through Spark Connect). Set on started,
	// succeeded and failed.
	Backend string `json:"backend,omitempty"`
	// Replica is the reactor replica that published the event (the one
	// holding the table's lease).
	Replica string `json:"replica,omitempty"`

	// The rest is set on succeeded and failed only.

	// Outcome refines the phase: succeeded or noop (phase succeeded),
	// gave_up (every commit attempt conflicted) or failed (phase failed).
	Outcome             string           `json:"outcome,omitempty"`
	Error               string           `json:"error,omitempty"`
	DurationSeconds     float64          `json:"duration_seconds,omitempty"`
	Attempts            int              `json:"attempts,omitempty"`
	Conflicts           int              `json:"conflicts,omitempty"`
	Commits             int              `json:"commits,omitempty"`
	CommittedSnapshotID int64            `json:"committed_snapshot_id,omitempty"`
	Counts              map[string]int64 `json:"counts,omitempty"`
	// RefusedDeletions counts the files the deletion rule kept, by the
	// rule they broke; RefusedRecords the reactor records in the table's
	// storage refused as not reactor's own, by reason
	// (docs/design.md#rule-own-table).
	RefusedDeletions map[string]int `json:"refused_deletions,omitempty"`
	RefusedRecords   map[string]int `json:"refused_records,omitempty"`
}

// Terminal reports whether the event ends the job's life.
func (e JobEvent) Terminal() bool {
	return e.Phase == JobSucceeded || e.Phase == JobFailed
}
