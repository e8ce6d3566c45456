package status

import (
	"context"
	"time"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/planner"
)

// Source is what the pages read: a running worker's state, copied under
// its locks. Every method must be quick and must not block on I/O except
// Inspect, which the table page calls once per view.
type Source interface {
	// Replica names this process among the replicas ("" before NATS is
	// reachable).
	Replica() string
	// Tables lists the tables the planner holds state for, sorted.
	Tables() []string
	// Health is the planner's health report of a table, from its state
	// (planner.Planner.Health).
	Health(table string) (planner.Health, bool)
	// TableCounters is the planner's counters of every partition of a
	// table and the snapshot they describe (planner.Planner.TableCounters).
	TableCounters(table string) (int64, []planner.PartitionCounters)
	// Jobs is the worker's job history: active, recent and failed jobs,
	// and every table's last finished job.
	Jobs() Jobs
	// TableJobs are the table's last finished jobs, newest first.
	TableJobs(table string) []Job
	// TableLastJobs are the table's last finished job of each kind, in
	// the order of jobkind.All: a kind that runs rarely (a compaction
	// among many expiries) stays visible after it left TableJobs.
	TableLastJobs(table string) []Job
	// Outlook is what the planner would schedule for the table now and
	// why, from its state alone (planner.Planner.Outlook): no I/O, so /
	// asks it of every table without a job queued or running.
	Outlook(table string) (planner.Plan, bool)
	// Owners maps a table to the replica holding its lease ("" when none
	// does, or before NATS is reachable). It is called once per page.
	Owners() func(table string) string
	// Inspect reads the table's current snapshot and its pending
	// deletions: what `reactor plan` and the deferred deletion pass read.
	Inspect(ctx context.Context, table string) (Inspection, error)
	// LastPoll is the polling safety net's last check of the table: when,
	// and its outcome (unchanged, changed, loaded, error); ok is false
	// before the first.
	LastPoll(table string) (at time.Time, outcome string, ok bool)
}

// Job is one job as the worker last heard of it: its latest event
// (scheduled, started, succeeded or failed) and when it started running.
type Job struct {
	events.JobEvent
	// StartedAt is when it left the queue; zero while it waits.
	StartedAt time.Time
}

// Running reports whether the job holds a slot (or runs on Spark).
func (j Job) Running() bool { return !j.StartedAt.IsZero() && !j.Terminal() }

// Jobs is the worker's job history, copied.
type Jobs struct {
	// Active are the jobs dispatched and not finished: queued or running,
	// oldest first.
	Active []Job
	// Recent are the last finished jobs, newest first; Failures the last
	// that failed or gave up, newest first.
	Recent   []Job
	Failures []Job
	// Last is every table's last finished job.
	Last map[string]Job
}

// Inspection is what the table page reads from the table itself.
type Inspection struct {
	// Plan is planner.Explain of the current snapshot.
	Plan planner.Plan
	// Pending are the table's batches of files waiting for deletion,
	// earliest due first, with the number of files of each (-1 when the
	// batch could not be read).
	Pending []PendingBatch
	// PendingErr is why the pending deletions could not be listed.
	PendingErr error
}

// PendingBatch is one stored batch of files expiry unlinked.
type PendingBatch struct {
	deletions.Ref
	Files int
	JobID string
	// Refused is why the batch is not reactor's own (deletions'
	// refusal reason): it is never acted on.
	Refused string
}
