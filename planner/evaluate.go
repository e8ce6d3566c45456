package planner

// Evaluation for reactor run: gather the table's live state, pick its job
// (pick.go), start it or arm the table's wake-up timer.

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobs"
)

// evaluateLocked picks the table's job now and starts it, or arms a timer
// for the earliest moment the answer may change: it gathers the live state
// under the table's lock, asks the picker (pick.go), which reads and never
// writes, and applies the decision.
func (p *Planner) evaluateLocked(st *tableState) {
	if p.isClosed() {
		return
	}
	now := p.now()
	st.orphans.firstListing(st.settings, now, rand.Int64N)
	d := pick(st.view(), st.environment(), now, false)
	if d.manifestNote != "" && st.manifests.floorSaid != st.counters.dataManifests {
		st.manifests.floorSaid = st.counters.dataManifests
		p.log.Warn("manifest_count reached but no rewrite can reduce the manifests", "table", st.table.String(),
			"reason", "manifest_count", "manifests", st.counters.dataManifests, "manifest_count", st.settings.ManifestCount, "note", d.manifestNote)
	}
	if !d.metadataFirst {
		// Metadata over its bounds is picked before the partitions are
		// looked at: nothing of theirs changes then.
		p.applyPartitionEffectsLocked(st, d.effects, now)
	}
	if d.job != nil {
		p.scheduleLocked(st, *d.job)
		return
	}
	if !d.wake.IsZero() && st.running == nil {
		p.wakeAtLocked(st, d.wake)
	}
}

// applyPartitionEffectsLocked records what picking changed in the
// partitions' state: the start and end of a quiet wait (max_quiet_wait
// counts from its start), a quiet spell's merge, and says so.
func (p *Planner) applyPartitionEffectsLocked(st *tableState, effects []partitionEffect, now time.Time) {
	set := st.settings
	for _, e := range effects {
		ps := e.ps
		switch {
		case e.cooling:
			p.log.Debug("partition over threshold, cooling down", "table", st.table.String(), "partition", ps.Key,
				"reason", "cooldown", "until", ps.cooldownUntil.time())
		case e.startWaiting:
			ps.waitingSince = instantOf(now)
			p.log.Info("partition over threshold but still being written; waiting for it to cool",
				"table", st.table.String(), "partition", ps.Key, "reason", "quiet_period",
				"quiet_period", set.QuietPeriod, "max_quiet_wait", set.MaxQuietWait)
		}
		if e.stopWaiting {
			ps.waitingSince = 0
		}
		if e.quietMerge {
			ps.quietMerged = spellOf(ps)
			p.log.Info("partition quiet: merging what the tier rule left", "table", st.table.String(), "partition", ps.Key,
				"reason", jobs.CompactWhenQuietAfter, "note", e.note)
		}
	}
}

// loadPendingLocked lists the table's pending deletion batches the first
// time the table is seen (they outlive reactor: a restart finds them). A
// listing that fails is retried at the next observation.
func (p *Planner) loadPendingLocked(ctx context.Context, st *tableState, tbl *table.Table) {
	fs, err := tbl.FS(ctx)
	if err == nil {
		var refs []deletions.Ref
		if refs, err = deletions.List(fs, tbl.Location()); err == nil {
			st.expiry.pending = mergeRefs(st.expiry.pending, refs)
			st.expiry.pendingLoaded = true
			if len(refs) > 0 {
				p.log.Info("pending deletions found", "table", st.table.String(), "batches", len(refs),
					"earliest_due", refs[0].Due)
			}
			return
		}
	}
	p.log.Warn("could not list the table's pending deletions; will retry", "table", st.table.String(), "error", err)
}

// scheduleLocked starts the picked job: it marks its partitions in a job,
// records it as the table's running one and dispatches it.
func (p *Planner) scheduleLocked(st *tableState, job jobs.Job) {
	if !p.ownsTable(st.table.String()) {
		return // its lease moved on; the new owner schedules it
	}
	for _, part := range job.Partitions {
		if ps, ok := st.counters.partitions[part.Key]; ok {
			ps.inJob = true
		}
	}
	job.ID = uuid.NewString()
	st.running = &job
	p.met.JobsScheduled.WithLabelValues(job.Kind.String()).Inc()
	p.log.Info("job scheduled", "table", st.table.String(), "job_id", job.ID, "kind", job.Kind,
		"partitions", job.PartitionKeys(), "reason", job.ReasonText())
	p.dispatch(job)
}

func (p *Planner) wakeAtLocked(st *tableState, at time.Time) {
	if st.timer != nil {
		if !at.Before(st.wakeAt) {
			return
		}
		st.timer.Stop()
	}
	st.wakeAt = at
	st.timer = p.after(at.Sub(p.now()), func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.timer = nil
		p.evaluateLocked(st)
	})
}
