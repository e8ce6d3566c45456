package worker

import (
	"maps"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/redact"
)

// jobEvent describes job at phase, without results.
func jobEvent(phase string, job jobs.Job, at time.Time) events.JobEvent {
	reasons := make([]events.JobReason, len(job.Reasons))
	for i, r := range job.Reasons {
		reasons[i] = events.JobReason{Partition: r.Partition, Threshold: string(r.Threshold), Measured: r.Measured, Limit: r.Limit, Note: r.Note}
	}
	return events.JobEvent{
		Phase: phase, JobID: job.ID, Kind: job.Kind.String(), Table: job.Table.String(),
		Partitions: job.PartitionKeys(), Reasons: reasons, Time: at.UTC(),
		ScheduledAt: job.ScheduledAt.UTC(), BaseSnapshotID: job.BaseSnapshotID,
	}
}

// finishedEvent describes a finished job with its outcome and counts. A
// noop is a success (nothing needed doing); giving up on conflicts is a
// failure with outcome gave_up.
func finishedEvent(job jobs.Job, res jobs.Result, rep executor.Report, at time.Time) events.JobEvent {
	phase := events.JobSucceeded
	if res.Outcome == jobs.GaveUp || res.Outcome == jobs.Failed {
		phase = events.JobFailed
	}
	ev := jobEvent(phase, job, at)
	ev.Outcome = res.Outcome.String()
	if res.Err != nil {
		// The status page shows it redacted; NATS subscribers get the same.
		ev.Error = redact.String(res.Err.Error())
	}
	ev.DurationSeconds = rep.Duration.Seconds()
	ev.Attempts, ev.Conflicts, ev.Commits = rep.Attempts, rep.Conflicts, rep.Commits
	ev.CommittedSnapshotID = rep.CommittedSnapshotID
	ev.Counts = rep.CountMap(job.Kind)
	ev.Backend = rep.Backend
	for rule, n := range rep.Refusals.ByRule {
		if ev.RefusedDeletions == nil {
			ev.RefusedDeletions = map[string]int{}
		}
		ev.RefusedDeletions[string(rule)] = n
	}
	if len(rep.Refusals.Records) > 0 {
		ev.RefusedRecords = maps.Clone(rep.Refusals.Records)
	}
	return ev
}

// publishJob sends a job event (best effort, like every report: the job's
// log lines say the same).
func (w *Worker) publishJob(ev events.JobEvent) {
	if m := w.leaseManager(); m != nil {
		ev.Replica = m.Replica()
	}
	w.status.jobs.record(ev)
	w.publish(events.JobSubject(w.jobPrefix, ev.Phase, ev.Table), ev)
}
