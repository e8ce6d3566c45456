package planner

// The table-wide jobs' state, one struct per kind: expiry (with the later
// deletion pass of what it unlinked), the manifest rewrite, orphan
// cleanup. Each says whether its job is due (a method the picker calls,
// pick.go, which reads and never writes) and records a finished job
// (Planner.Finished, finished.go).

import (
	"fmt"
	"sort"
	"time"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/thresholds"
)

// tableWideDue is what one table-wide job's state says at a moment: the
// job when it is due and free to start; held when it is due but waits (a
// cool-down, a settled table), and why; wake, the earliest moment the
// answer may change without a commit (zero: none foreseen).
type tableWideDue struct {
	job  *jobs.Job
	held string
	wake time.Time
}

// expiryState is the scheduling state of expire_snapshots and of the
// deferred deletion of the files it unlinked (delete_expired_files).
type expiryState struct {
	cooldownUntil time.Time
	settledAt     int64 // current snapshot when expiry last found nothing
	// pending are the batches of files expiry unlinked, earliest due
	// first; they live in the table's storage (package deletions) and are
	// listed once when the table is first seen.
	pending        []deletions.Ref
	pendingLoaded  bool
	pendingRetryAt time.Time // a failed deletion pass waits until then
}

// due decides expire_snapshots from the history's plan (snapshotSummary.
// expiry) and this state. The count bound ignores the cool-down (keeping
// half the history is its own hysteresis); age-based expiry waits it out,
// or a table whose snapshots age out one commit at a time would expire
// once per commit. An expiry that found nothing at this snapshot although
// the estimate said otherwise (a branch's own retention) waits for a
// commit.
func (e expiryState) due(plan expiryPlan, snapshotID int64, now time.Time) tableWideDue {
	switch {
	case plan.due && e.settledAt == snapshotID:
		return tableWideDue{held: "expire_snapshots: the last expiry found nothing to expire at this snapshot (a branch's own retention); waits for a commit"}
	case plan.due && (plan.reason.Threshold == jobs.SnapshotCount || !now.Before(e.cooldownUntil)):
		return tableWideDue{job: &jobs.Job{Kind: jobkind.ExpireSnapshots, Reasons: []jobs.Reason{plan.reason},
			ExpireOlderThan: plan.olderThan, ExpireRetainLast: plan.retainLast}}
	case plan.due:
		return tableWideDue{held: fmt.Sprintf("expire_snapshots due (%s), cooling down until %s", plan.reason.Threshold,
			e.cooldownUntil.Format(time.TimeOnly)), wake: e.cooldownUntil}
	}
	return tableWideDue{wake: plan.next}
}

// passDue decides the deletion pass: the pending batches due by now, or,
// when none is, the earliest due time.
func (e expiryState) passDue(margin time.Duration, now time.Time) tableWideDue {
	if len(e.pending) == 0 {
		return tableWideDue{}
	}
	if now.Before(e.pendingRetryAt) {
		return tableWideDue{held: fmt.Sprintf("delete_expired_files: the last pass failed; retries at %s",
			e.pendingRetryAt.Format(time.TimeOnly)), wake: e.pendingRetryAt}
	}
	var d tableWideDue
	var due []deletions.Ref
	for _, r := range e.pending {
		if r.Due.After(now) {
			d.wake = r.Due
			break
		}
		due = append(due, r)
	}
	if len(due) == 0 {
		return d
	}
	d.job = &jobs.Job{Kind: jobkind.DeleteExpiredFiles, PendingDeletes: due, Reasons: []jobs.Reason{{Partition: jobs.TableWide,
		Threshold: jobs.MinReaderMargin, Measured: int64(now.Sub(due[0].Due.Add(-margin)) / time.Second), Limit: int64(margin / time.Second),
		Note: fmt.Sprintf("%d batches of files expiry unlinked, past the reader margin", len(due))}}}
	return d
}

// finished records an expiry: a cool-down before the next age-based one
// (the snapshot bound does not wait); one that found nothing settles until
// the next commit. The batches it unlinked join the pending ones.
func (e *expiryState) finished(job jobs.Job, res jobs.Result, snapshotID int64, now time.Time) {
	switch res.Outcome {
	case jobs.GaveUp:
		e.cooldownUntil = now.Add(job.Settings.ConflictCooldown)
	case jobs.Failed, jobs.Succeeded:
		e.cooldownUntil = now.Add(job.Settings.Cooldown)
	case jobs.Noop:
		e.settledAt = snapshotID
	}
	e.pending = mergeRefs(e.pending, res.PendingDeletes)
}

// passFinished records a deletion pass: its batches are done, but for
// what it left (a failure, a batch not due after all, batches rebuilt from
// an intent); a failed pass waits a cool-down.
func (e *expiryState) passFinished(job jobs.Job, res jobs.Result, now time.Time) {
	if res.Outcome == jobs.Failed {
		e.pendingRetryAt = now.Add(job.Settings.Cooldown)
	}
	done := map[string]bool{}
	for _, r := range job.PendingDeletes {
		done[r.Location] = true
	}
	kept := e.pending[:0]
	for _, r := range e.pending {
		if !done[r.Location] {
			kept = append(kept, r)
		}
	}
	e.pending = mergeRefs(kept, res.PendingDeletes)
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

// manifestState is the scheduling state of rewrite_manifests.
type manifestState struct {
	cooldownUntil time.Time
	settledAt     int // manifest count a no-op rewrite left; 0: none
	floorSaid     int // manifest count the "cannot reach manifest_count" line was logged at
}

// check measures manifest_count for the table's current manifests; over
// is whether a rewrite is due and can reduce them (not when a no-op
// rewrite left this very count).
func (m manifestState) check(tc *tableCounters, set thresholds.Effective) (c Check, over bool) {
	c = manifestCheck(tc.dataManifests, tc.manifestFloor(), set.ManifestCount)
	return c, c.Over && tc.dataManifests != m.settledAt
}

// due decides the manifest rewrite.
func (m manifestState) due(c Check, over bool, now time.Time) tableWideDue {
	switch {
	case !over:
		return tableWideDue{}
	case now.Before(m.cooldownUntil):
		return tableWideDue{held: fmt.Sprintf("rewrite_manifests due, cooling down until %s", m.cooldownUntil.Format(time.TimeOnly)),
			wake: m.cooldownUntil}
	}
	return tableWideDue{job: &jobs.Job{Kind: jobkind.RewriteManifests, Reasons: []jobs.Reason{{Partition: jobs.TableWide,
		Threshold: jobs.ManifestCount, Measured: c.Measured, Limit: c.Limit}}}}
}

// finished records a manifest rewrite: a cool-down (the conflict one when
// it gave up); a no-op settles the count it left.
func (m *manifestState) finished(job jobs.Job, res jobs.Result, dataManifests int, now time.Time) {
	m.cooldownUntil = now.Add(job.Settings.Cooldown)
	if res.Outcome == jobs.GaveUp {
		m.cooldownUntil = now.Add(job.Settings.ConflictCooldown)
	}
	if res.Outcome == jobs.Noop {
		m.settledAt = dataManifests
	}
}

// orphanState is the scheduling state of remove_orphans.
type orphanState struct {
	cooldownUntil  time.Time
	nextListing    time.Time       // first set when the table is first evaluated
	dryRunReported map[string]bool // candidates a dry run already reported
	// gcDisabled: the table's gc.enabled is false (Iceberg's: its files
	// may be shared), so no orphan cleanup is scheduled for it.
	gcDisabled bool
	// s3Tables: the table lies in an S3 table bucket (scope.S3Tables):
	// AWS removes its unreferenced files, and its store lists nothing, so
	// no orphan cleanup is scheduled for it either.
	s3Tables bool
}

// scheduled reports whether orphan cleanup is ever scheduled for the table.
func (o orphanState) scheduled(set thresholds.Effective) bool {
	return !o.gcDisabled && !o.s3Tables && set.OrphanListingInterval > 0
}

// firstListing sets the first listing's time when the table is first
// evaluated (spread over the interval, rather than listing every bucket
// at start-up); at is the random offset's source.
func (o *orphanState) firstListing(set thresholds.Effective, now time.Time, offset func(n int64) int64) {
	if o.nextListing.IsZero() && o.scheduled(set) && !now.Before(o.cooldownUntil) {
		o.nextListing = now.Add(time.Duration(offset(int64(set.OrphanListingInterval))))
	}
}

// due decides orphan cleanup: tracked files past the margin (no listing
// needed), or a full listing when its interval has passed or tracking is
// incomplete. Orphan cleanup has no first listing time yet only where the
// table was never evaluated by a running reactor: not assessed.
func (o orphanState) due(tracked map[string]unconfirmedFile, incomplete bool, set thresholds.Effective, now time.Time) tableWideDue {
	if now.Before(o.cooldownUntil) {
		return tableWideDue{wake: o.cooldownUntil}
	}
	if !o.scheduled(set) || o.nextListing.IsZero() {
		return tableWideDue{}
	}
	if !now.Before(o.nextListing) || incomplete {
		return tableWideDue{job: &jobs.Job{Kind: jobkind.RemoveOrphans, OrphanSource: jobs.OrphansFromListing, Reasons: []jobs.Reason{{
			Partition: jobs.TableWide, Threshold: jobs.OrphanListingInterval,
			Measured: int64(now.Sub(o.nextListing.Add(-set.OrphanListingInterval)) / time.Second),
			Limit:    int64(set.OrphanListingInterval / time.Second),
			Note:     fmt.Sprintf("full listing (tracking complete: %v)", !incomplete)}}}}
	}
	d := tableWideDue{wake: o.nextListing}
	cutoff := now.Add(-set.OrphanMargin)
	var cands []jobs.OrphanCandidate
	for _, f := range tracked {
		if f.created.Before(cutoff) {
			cands = append(cands, jobs.OrphanCandidate{Location: f.location, Size: f.size, Created: f.created})
		} else if at := f.created.Add(set.OrphanMargin); at.Before(d.wake) {
			d.wake = at
		}
	}
	if len(cands) == 0 {
		return d
	}
	if !set.OrphanDelete {
		fresh := false
		for _, c := range cands {
			fresh = fresh || !o.dryRunReported[location.Identity(c.Location)]
		}
		if !fresh {
			return d // a dry run reported all of them already
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Created.Before(cands[j].Created) })
	d.job = &jobs.Job{Kind: jobkind.RemoveOrphans, OrphanSource: jobs.OrphansFromTracking, OrphanCandidates: cands, Reasons: []jobs.Reason{{
		Partition: jobs.TableWide, Threshold: jobs.OrphanMargin, Measured: int64(len(cands)), Limit: int64(set.OrphanMargin / time.Second),
		Note: fmt.Sprintf("%d tracked files unreferenced for longer than %s", len(cands), set.OrphanMargin)}}}
	return d
}

// finished records an orphan cleanup: a cool-down, the next listing after
// a listing that did not fail, and the candidates a dry run reported (not
// reported again).
func (o *orphanState) finished(job jobs.Job, res jobs.Result, now time.Time) {
	o.cooldownUntil = now.Add(job.Settings.Cooldown)
	if job.OrphanSource == jobs.OrphansFromListing && res.Outcome != jobs.Failed {
		o.nextListing = now.Add(job.Settings.OrphanListingInterval)
	}
	if !job.Settings.OrphanDelete && res.Outcome != jobs.Failed {
		if o.dryRunReported == nil {
			o.dryRunReported = map[string]bool{}
		}
		for _, c := range job.OrphanCandidates {
			o.dryRunReported[location.Identity(c.Location)] = true
		}
	}
}
