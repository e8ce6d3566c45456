package planner

// Evaluation: which jobs a table is due, and when to look again.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
)

// evaluateLocked schedules one job for every partition of the table that is
// over its threshold and free to run now, and arms a timer for the earliest
// moment a deferred partition becomes free.
func (p *Planner) evaluateLocked(st *tableState) {
	if p.isClosed() {
		return
	}
	now := p.now()
	set := st.settings
	var (
		parts   []jobs.Partition
		reasons []jobs.Reason
		wake    time.Time
	)
	deferUntil := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	// Metadata over its bounds comes first: a compaction committing on a
	// history that keeps growing loses every race against the writer, and
	// the writer's own commits slow down with it
	// (docs/design.md#pitfall-metadata-size).
	if st.running == nil && st.metadataOverBounds() && p.tableWideLocked(st, now, deferUntil, true) {
		return
	}
	keys := make([]string, 0, len(st.counters.partitions))
	for k := range st.counters.partitions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Partitions due for a position-delete rewrite wait for the table's
	// compaction (if any) to finish: one job per table at a time.
	var deleteParts, sortParts, convertParts []jobs.Partition
	var deleteReasons, sortReasons, convertReasons []jobs.Reason
	for _, k := range keys {
		ps := st.counters.partitions[k]
		var settled []jobkind.Kind
		if ps.settledWrite == instantOf(ps.LastWrite) {
			settled = ps.settledKinds.Kinds()
		}
		_, kind, reason, applyDeletes, due := partitionDue(st.counters.evaluated(ps), set, now, settled...)
		if !due && set.Strategy.Sorts() && ps.DataFiles > ps.SortedFiles && !ps.LastWrite.IsZero() {
			// Unsorted but still being written: its sort comes once it
			// has been quiet for sort_quiet_period.
			deferUntil(ps.LastWrite.Add(set.SortQuietPeriod))
		}
		quiet := false
		if !due {
			// Nothing else to do here: what the tier rule left, once the
			// partition has been quiet long enough (quiet.go).
			reason, due = quietLocked(ps, set, now, deferUntil)
			kind, quiet = jobkind.Compact, due
		}
		if !due || ps.inJob {
			continue
		}
		if st.running != nil {
			// One job per table at a time: Finished re-evaluates.
			continue
		}
		if until := ps.cooldownUntil.time(); now.Before(until) {
			p.log.Debug("partition over threshold, cooling down", "table", st.table.String(), "partition", ps.Key,
				"reason", "cooldown", "until", until)
			deferUntil(until)
			continue
		}
		reason.Partition = ps.Key
		if quietEnd := ps.LastWrite.Add(set.QuietPeriod); !quiet && now.Before(quietEnd) {
			if ps.waitingSince == 0 {
				ps.waitingSince = instantOf(now)
				p.log.Info("partition over threshold but still being written; waiting for it to cool",
					"table", st.table.String(), "partition", ps.Key, "reason", "quiet_period",
					"quiet_period", set.QuietPeriod, "max_quiet_wait", set.MaxQuietWait)
			}
			giveUpWaiting := ps.waitingSince.time().Add(set.MaxQuietWait)
			if set.MaxQuietWait == 0 || now.Before(giveUpWaiting) {
				deferUntil(quietEnd)
				if set.MaxQuietWait > 0 {
					deferUntil(giveUpWaiting)
				}
				continue
			}
			// Written continuously for max_quiet_wait: compact it beside
			// the writer rather than let it grow without bound.
			wait := fmt.Sprintf("still being written after waiting %s (max_quiet_wait)", set.MaxQuietWait)
			if reason.Note != "" {
				wait = reason.Note + "; " + wait
			}
			reason.Note = wait
		}
		ps.waitingSince = 0
		part := ps.partition()
		part.ApplyDeletes = applyDeletes
		if quiet {
			part.Quiet = true
			ps.quietMerged = spellOf(ps)
			p.log.Info("partition quiet: merging what the tier rule left", "table", st.table.String(), "partition", ps.Key,
				"reason", jobs.CompactWhenQuietAfter, "note", reason.Note)
		}
		switch kind {
		case jobkind.ConvertEqualityDeletes:
			convertParts = append(convertParts, part)
			convertReasons = append(convertReasons, reason)
			continue
		case jobkind.RewritePositionDeletes:
			deleteParts = append(deleteParts, part)
			deleteReasons = append(deleteReasons, reason)
			continue
		case jobkind.Sort:
			sortParts = append(sortParts, part)
			sortReasons = append(sortReasons, reason)
			continue
		}
		parts = append(parts, part)
		reasons = append(reasons, reason)
	}
	if len(parts) == 0 && len(convertParts) > 0 {
		for _, part := range convertParts {
			st.counters.partitions[part.Key].inJob = true
		}
		p.scheduleLocked(st, jobkind.ConvertEqualityDeletes, convertParts, convertReasons, now)
		return
	}
	if len(parts) == 0 && len(deleteParts) > 0 {
		parts, reasons = deleteParts, deleteReasons
		for _, part := range parts {
			st.counters.partitions[part.Key].inJob = true
		}
		p.scheduleLocked(st, jobkind.RewritePositionDeletes, parts, reasons, now)
		return
	}
	if len(parts) == 0 && len(sortParts) > 0 {
		for _, part := range sortParts {
			st.counters.partitions[part.Key].inJob = true
		}
		p.scheduleLocked(st, jobkind.Sort, sortParts, sortReasons, now, func(j *jobs.Job) { j.SortOrder = set.SortOrder })
		return
	}
	if len(parts) > 0 {
		for _, part := range parts {
			st.counters.partitions[part.Key].inJob = true
		}
		p.scheduleLocked(st, jobkind.Compact, parts, reasons, now)
		return
	}
	// Table-wide jobs come after compaction: it changes what they see.
	if st.running == nil && p.tableWideLocked(st, now, deferUntil, false) {
		return
	}
	if !wake.IsZero() && st.running == nil {
		p.wakeAtLocked(st, wake)
	}
}

// metadataOverBounds reports whether the table's history or manifest list
// has reached its bound: every commit — the writers' and reactor's — reads
// and rewrites that metadata, so bringing it back comes before data work.
func (st *tableState) metadataOverBounds() bool {
	set := st.settings
	return (set.SnapshotCount > 0 && st.snapshots.count() >= set.SnapshotCount) ||
		st.manifestsOverBound()
}

// tableWideLocked schedules the first due table-wide job, in the seeds'
// order — expiry, the deletion of what expiry unlinked, manifest rewrite,
// orphan cleanup — and reports whether it scheduled one. metadataOnly
// considers expiry and manifest rewrite alone (the jobs that come before
// compaction when the metadata is over its bounds).
func (p *Planner) tableWideLocked(st *tableState, now time.Time, deferUntil func(time.Time), metadataOnly bool) bool {
	set := st.settings
	due, reason, olderThan, retainLast, next := st.snapshots.expiry(now, set)
	if due && st.expireSettledAt == st.counters.snapshotID {
		// The last expiry found nothing although the estimate said
		// otherwise (a branch's own retention): wait for a commit.
		due, next = false, time.Time{}
	}
	// The count bound ignores the cool-down (keeping half the history is
	// its own hysteresis); age-based expiry waits it out, or a table whose
	// snapshots age out one commit at a time would expire once per commit.
	switch {
	case due && (reason.Threshold == jobs.SnapshotCount || !now.Before(st.expireCooldownUntil)):
		p.scheduleLocked(st, jobkind.ExpireSnapshots, nil, []jobs.Reason{reason}, now, func(j *jobs.Job) {
			j.ExpireOlderThan, j.ExpireRetainLast = olderThan, retainLast
		})
		return true
	case due:
		deferUntil(st.expireCooldownUntil)
	case !next.IsZero():
		deferUntil(next)
	}
	if !metadataOnly {
		if job := p.deletionPassLocked(st, now, deferUntil); job != nil {
			p.scheduleLocked(st, jobkind.DeleteExpiredFiles, nil, job.Reasons, now, func(j *jobs.Job) { j.PendingDeletes = job.PendingDeletes })
			return true
		}
	}
	if p.manifestRewriteDueLocked(st) {
		if now.Before(st.manifestCooldownUntil) {
			deferUntil(st.manifestCooldownUntil)
		} else {
			p.scheduleLocked(st, jobkind.RewriteManifests, nil, []jobs.Reason{{Partition: jobs.TableWide, Threshold: jobs.ManifestCount,
				Measured: int64(st.counters.dataManifests), Limit: int64(set.ManifestCount)}}, now)
			return true
		}
	}
	if metadataOnly {
		return false
	}
	// Orphan cleanup comes last: after expiry, which makes files orphans.
	if now.Before(st.orphanCooldownUntil) {
		deferUntil(st.orphanCooldownUntil)
		return false
	}
	if job := p.orphanJobLocked(st, now, deferUntil); job != nil {
		p.scheduleLocked(st, jobkind.RemoveOrphans, nil, job.Reasons, now, func(j *jobs.Job) {
			j.OrphanSource, j.OrphanCandidates = job.OrphanSource, job.OrphanCandidates
		})
		return true
	}
	return false
}

// deletionPassLocked returns the job that deletes the pending batches due
// by now, or nil (arming the earliest due time).
func (p *Planner) deletionPassLocked(st *tableState, now time.Time, deferUntil func(time.Time)) *jobs.Job {
	if len(st.pending) == 0 {
		return nil
	}
	if now.Before(st.pendingRetryAt) {
		deferUntil(st.pendingRetryAt)
		return nil
	}
	var due []deletions.Ref
	for _, r := range st.pending {
		if r.Due.After(now) {
			deferUntil(r.Due)
			break
		}
		due = append(due, r)
	}
	if len(due) == 0 {
		return nil
	}
	margin := st.settings.MinReaderMargin
	return &jobs.Job{PendingDeletes: due, Reasons: []jobs.Reason{{Partition: jobs.TableWide, Threshold: jobs.MinReaderMargin,
		Measured: int64(now.Sub(due[0].Due.Add(-margin)) / time.Second), Limit: int64(margin / time.Second),
		Note: fmt.Sprintf("%d batches of files expiry unlinked, past the reader margin", len(due))}}}
}

// loadPendingLocked lists the table's pending deletion batches the first
// time the table is seen (they outlive reactor: a restart finds them). A
// listing that fails is retried at the next observation.
func (p *Planner) loadPendingLocked(ctx context.Context, st *tableState, tbl *table.Table) {
	fs, err := tbl.FS(ctx)
	if err == nil {
		var refs []deletions.Ref
		if refs, err = deletions.List(fs, tbl.Location()); err == nil {
			st.pending = mergeRefs(st.pending, refs)
			st.pendingLoaded = true
			if len(refs) > 0 {
				p.log.Info("pending deletions found", "table", st.table.String(), "batches", len(refs),
					"earliest_due", refs[0].Due)
			}
			return
		}
	}
	p.log.Warn("could not list the table's pending deletions; will retry", "table", st.table.String(), "error", err)
}

// mergeRefs adds refs to a due-ordered list, once each.
func mergeRefs(list, refs []deletions.Ref) []deletions.Ref {
	seen := make(map[string]bool, len(list))
	for _, r := range list {
		seen[r.Location] = true
	}
	for _, r := range refs {
		if !seen[r.Location] {
			seen[r.Location] = true
			list = append(list, r)
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Due.Before(list[j].Due) })
	return list
}

// orphanJobLocked decides whether orphan cleanup is due: tracked files past
// the margin (no listing needed), or a full listing when its interval has
// passed or tracking is incomplete. It returns nil when nothing is due and
// arms the next deadline through deferUntil.
func (p *Planner) orphanJobLocked(st *tableState, now time.Time, deferUntil func(time.Time)) *jobs.Job {
	if st.gcDisabled || st.s3Tables {
		return nil
	}
	set := st.settings
	if set.OrphanListingInterval <= 0 {
		return nil // not configured: nothing to schedule
	}
	if st.nextListing.IsZero() {
		// Spread the first listings of many tables over the interval
		// rather than listing every bucket at start-up.
		st.nextListing = now.Add(time.Duration(rand.Int64N(int64(set.OrphanListingInterval))))
	}
	if !now.Before(st.nextListing) || st.trackingIncomplete {
		return &jobs.Job{OrphanSource: jobs.OrphansFromListing, Reasons: []jobs.Reason{{Partition: jobs.TableWide, Threshold: jobs.OrphanListingInterval,
			Measured: int64(now.Sub(st.nextListing.Add(-set.OrphanListingInterval)) / time.Second),
			Limit:    int64(set.OrphanListingInterval / time.Second),
			Note:     fmt.Sprintf("full listing (tracking complete: %v)", !st.trackingIncomplete)}}}
	}
	deferUntil(st.nextListing)
	cutoff := now.Add(-set.OrphanMargin)
	var cands []jobs.OrphanCandidate
	for _, f := range st.unconfirmed {
		if f.created.Before(cutoff) {
			cands = append(cands, jobs.OrphanCandidate{Location: f.location, Size: f.size, Created: f.created})
		} else {
			deferUntil(f.created.Add(set.OrphanMargin))
		}
	}
	if len(cands) == 0 {
		return nil
	}
	if !set.OrphanDelete {
		fresh := false
		for _, c := range cands {
			fresh = fresh || !st.dryRunReported[location.Identity(c.Location)]
		}
		if !fresh {
			return nil // a dry run reported all of them already
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Created.Before(cands[j].Created) })
	return &jobs.Job{OrphanSource: jobs.OrphansFromTracking, OrphanCandidates: cands, Reasons: []jobs.Reason{{Partition: jobs.TableWide,
		Threshold: jobs.OrphanMargin, Measured: int64(len(cands)), Limit: int64(set.OrphanMargin / time.Second),
		Note: fmt.Sprintf("%d tracked files unreferenced for longer than %s", len(cands), set.OrphanMargin)}}}
}

// scheduleLocked creates the job, records it as the table's running one and
// dispatches it. with sets kind-specific fields before anyone sees the job.
func (p *Planner) scheduleLocked(st *tableState, kind jobkind.Kind, parts []jobs.Partition, reasons []jobs.Reason, now time.Time, with ...func(*jobs.Job)) {
	if !p.ownsTable(st.table.String()) {
		// Its lease moved on; the new owner schedules it.
		for _, part := range parts {
			if ps, ok := st.counters.partitions[part.Key]; ok {
				ps.inJob = false
			}
		}
		return
	}
	job := jobs.Job{
		ID:             uuid.NewString(),
		Kind:           kind,
		Table:          st.table,
		Partitions:     parts,
		Reasons:        reasons,
		Settings:       st.settings,
		ScheduledAt:    now,
		Priority:       jobs.PriorityOf(kind, reasons),
		BaseSnapshotID: st.counters.snapshotID,
	}
	job.InputFiles, job.InputBytes = st.counters.input(parts)
	for _, f := range with {
		f(&job)
	}
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
