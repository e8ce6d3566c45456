package planner

// A finished job: cool-downs, and the state of what it committed.

import (
	"context"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
)

// Finished records a job's result: cool-downs, and when it committed, the
// committed table's state (so reactor's own commit is accounted for without
// waiting for the next event, and cannot schedule itself again).
func (p *Planner) Finished(ctx context.Context, job jobs.Job, res jobs.Result) {
	if !p.ownsTable(job.Table.String()) {
		p.log.Info("job finished for a table this replica no longer owns; its owner plans it afresh",
			"table", job.Table.String(), "job_id", job.ID, "kind", job.Kind, "outcome", res.Outcome.String())
		return
	}
	st := p.state(job.Table)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.running != nil && st.running.ID == job.ID {
		st.running = nil
	}
	now := p.now()
	switch job.Kind {
	case jobkind.ExpireSnapshots:
		st.expiry.finished(job, res, st.counters.snapshotID, now)
	case jobkind.DeleteExpiredFiles:
		st.expiry.passFinished(job, res, now)
	case jobkind.RemoveOrphans:
		st.orphans.finished(job, res, now)
		for _, loc := range res.Settled {
			delete(st.unconfirmed, location.Identity(loc))
			delete(st.orphans.dryRunReported, location.Identity(loc))
		}
		p.deferOrphansLocked(st, res.Deferred)
	case jobkind.RewriteManifests:
		st.manifests.finished(job, res, st.counters.dataManifests, now)
	}
	for _, part := range job.Partitions {
		ps, ok := st.counters.partitions[part.Key]
		if !ok {
			continue
		}
		ps.inJob = false
		if part.Quiet && (res.Outcome == jobs.Failed || res.Outcome == jobs.GaveUp) {
			// The spell's merge did not happen: try again after the
			// cool-down below, if the partition is still quiet.
			ps.quietMerged = 0
		}
		if why, idle := res.NothingToDo[part.Key]; idle && res.Outcome == jobs.Succeeded {
			// The job changed other partitions but found nothing to do
			// in this one: settle it like a no-op.
			p.settleLocked(st, ps, job, why)
			ps.cooldownUntil = instantOf(now.Add(job.Settings.Cooldown))
			continue
		}
		switch {
		case job.Kind == jobkind.Sort && res.Outcome == jobs.Failed:
			// An order that does not fit the schema fails every time:
			// try again on the sort cadence, not every cool-down.
			ps.cooldownUntil = instantOf(now.Add(max(job.Settings.Cooldown, job.Settings.SortQuietPeriod)))
		case res.Outcome == jobs.GaveUp:
			ps.cooldownUntil = instantOf(now.Add(job.Settings.ConflictCooldown))
		case res.Outcome == jobs.Noop:
			why := res.NothingToDo[part.Key]
			if why == "" {
				why = "the job found nothing to do"
			}
			p.settleLocked(st, ps, job, why)
			ps.cooldownUntil = instantOf(now.Add(job.Settings.Cooldown))
		default:
			ps.cooldownUntil = instantOf(now.Add(job.Settings.Cooldown))
		}
	}
	st.counters.markOffloaded(res.OwnSnapshots, job.Kind == jobkind.Sort)
	if res.Table != nil {
		if err := p.observeLocked(ctx, st, res.Table); err != nil {
			p.log.Warn("could not apply reactor's own commit to table state; the next event will",
				"table", st.table.String(), "job_id", job.ID, "error", err)
		}
		return
	}
	p.evaluateLocked(st)
}

// settleLocked records that jobs of job's kind find nothing to do in ps
// until it is written again, and says so: a partition over a threshold
// that no job of this kind can fix is left alone rather than rewritten
// into the same files every cool-down.
func (p *Planner) settleLocked(st *tableState, ps *partitionState, job jobs.Job, why string) {
	if ps.settledWrite != instantOf(ps.LastWrite) {
		ps.settledKinds = 0
	}
	ps.settledWrite = instantOf(ps.LastWrite)
	ps.settledKinds = ps.settledKinds.With(job.Kind)
	p.log.Info("partition settled: not scheduled for this kind again until it is written", "table", st.table.String(),
		"partition", ps.Key, "kind", job.Kind, "job_id", job.ID, "reason", why)
}
