package planner

// The picker: the one decision of which job a table gets now. `reactor
// run` calls it with the live state (evaluate.go: gather under the table's
// lock, pick, apply); `reactor plan` and the status page call it with the
// state they have (explain.go) and say what they do not know. It reads and
// never writes, like pebble's pickAuto(env) or iceberg-go's
// PlanCompaction.

import (
	"fmt"
	"slices"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// tableView is what the picker reads of a table: its counters, with each
// partition's own scheduling state (in a job, cool-down, settled kinds,
// quiet wait, quiet merge: zero in a state built for one look), its
// snapshot history and its settings.
type tableView struct {
	table     tablename.Name
	counters  *tableCounters
	snapshots snapshotSummary
	settings  thresholds.Effective
}

// environment is what the picker needs beyond the table's files: the job
// running on it and the table-wide jobs' state. known is false in a
// process with no history of reactor's jobs (reactor plan): no job is
// known to run, no cool-down, no pending deletion, no tracked file.
type environment struct {
	known              bool
	running            *jobs.Job
	expiry             expiryState
	manifests          manifestState
	orphans            orphanState
	tracked            map[string]unconfirmedFile
	trackingIncomplete bool
}

// decision is the picker's answer: the job to start now (nil: none), the
// jobs also due behind it (one job per table at a time), what is due but
// held and why, and when to look again if nothing starts. effects are
// what the run applies to the partitions' state with it; detail (for plan
// and the status page) holds every check measured and each partition's
// wait.
type decision struct {
	job   *jobs.Job
	later []jobs.Job
	held  []string
	wake  time.Time
	// metadataFirst: the job is the expiry or manifest rewrite that comes
	// first because the metadata is over its bounds; the partitions were
	// not looked at for it (no effect applies).
	metadataFirst bool
	effects       []partitionEffect
	// manifestNote: manifest_count is reached but no rewrite can reduce
	// the manifests (said once per count).
	manifestNote string

	partitions []PartitionPlan
	tableWide  []Check
}

// partitionEffect is what picking changes in one partition's state.
type partitionEffect struct {
	ps *partitionState
	// cooling: over a threshold but cooling down (logged, no change).
	cooling bool
	// startWaiting: first found over a threshold while still being
	// written (max_quiet_wait counts from now); stopWaiting: no longer
	// waiting for it.
	startWaiting, stopWaiting bool
	// quietMerge: its quiet merge is in the job (once per spell).
	quietMerge bool
	note       string
}

func (d *decision) deferUntil(t time.Time) {
	if !t.IsZero() && (d.wake.IsZero() || t.Before(d.wake)) {
		d.wake = t
	}
}

// metadataOverBounds reports whether the table's history or manifest list
// has reached its bound: every commit — the writers' and reactor's — reads
// and rewrites that metadata, so bringing it back comes before data work
// (docs/design.md#pitfall-metadata-size).
func metadataOverBounds(v tableView, manifestsOver bool) bool {
	set := v.settings
	return (set.SnapshotCount > 0 && v.snapshots.count() >= set.SnapshotCount) || manifestsOver
}

// pick decides which job the table gets at now, in the job order of
// docs/design.md#job-order: metadata over its bounds first (expiry, then
// the manifest rewrite), then the partition jobs (compaction, the
// equality-delete conversion, the position-delete rewrite, sort), then
// the table-wide jobs (expiry, the deletion pass, the manifest rewrite,
// orphan cleanup). A partition is free to run when it is in no job, not
// cooling down, and quiet for quiet_period (or has waited max_quiet_wait);
// nothing starts while the table has a job running. detail also measures
// what the decision does not need (each partition's quiet-merge check, the
// waits in words) for plan and the status page.
func pick(v tableView, env environment, now time.Time, detail bool) decision {
	var d decision
	set, tc := v.settings, v.counters
	free := env.running == nil
	if !free {
		d.held = append(d.held, fmt.Sprintf("the table's %s job is running (one job per table at a time)", env.running.Kind))
	}

	// The table-wide jobs, decided once: they come first when the
	// metadata is over its bounds, last otherwise.
	expiry := v.snapshots.expiry(now, set)
	expire := env.expiry.due(expiry, tc.snapshotID, now)
	pass := env.expiry.passDue(set.MinReaderMargin, now)
	manifests, manifestsOver := env.manifests.check(tc, set)
	rewrite := env.manifests.due(manifests, manifestsOver, now)
	if free && manifests.Note != "" {
		d.manifestNote = manifests.Note
	}
	if free && manifests.Over && !manifestsOver {
		d.held = append(d.held, "rewrite_manifests: the last rewrite found nothing to merge at this manifest count; waits for a commit")
	}
	var order []*jobs.Job
	if free && metadataOverBounds(v, manifestsOver) {
		order = append(order, expire.job, rewrite.job)
		d.metadataFirst = expire.job != nil || rewrite.job != nil
	}

	groups := map[jobkind.Kind]*jobs.Job{}
	for _, ps := range tc.sortedPartitions() {
		pp := d.partition(ps, v, env, now, detail, groups)
		if detail {
			d.partitions = append(d.partitions, pp)
		}
	}
	for _, kind := range []jobkind.Kind{jobkind.Compact, jobkind.ConvertEqualityDeletes, jobkind.RewritePositionDeletes, jobkind.Sort} {
		if j := groups[kind]; j != nil {
			order = append(order, j)
		}
	}
	if free {
		order = append(order, expire.job, pass.job, rewrite.job)
		var orphans tableWideDue
		if detail || !slices.ContainsFunc(order, func(j *jobs.Job) bool { return j != nil }) {
			// Orphan cleanup comes last, after expiry, which makes files
			// orphans; it looks at every tracked file, so only when
			// nothing comes before it (or to show it).
			orphans = env.orphans.due(env.tracked, env.trackingIncomplete, set, now)
			order = append(order, orphans.job)
		}
		for _, td := range []tableWideDue{expire, pass, rewrite, orphans} {
			d.deferUntil(td.wake)
			if td.held != "" {
				d.held = append(d.held, td.held)
			}
		}
	}
	for _, j := range order {
		switch {
		case j == nil:
		case d.job == nil:
			d.job = j
		case !slices.ContainsFunc(d.later, func(l jobs.Job) bool { return l.Kind == j.Kind }) && j.Kind != d.job.Kind:
			d.later = append(d.later, *j)
		}
	}
	if d.job != nil {
		d.job = v.complete(*d.job, now)
	}
	if detail {
		for i := range d.later {
			d.later[i] = *v.complete(d.later[i], now)
		}
		if manifests.Over && !manifestsOver {
			manifests.Note = "held: the last rewrite found nothing to merge at this manifest count; waits for a commit"
		}
		d.tableWide = tableWideChecks(v, expiry, expire, manifests, env, now)
	}
	return d
}

// partition decides one partition: whether it is due and free, for which
// job (its group in groups), and in words why not (detail).
func (d *decision) partition(ps *partitionState, v tableView, env environment, now time.Time, detail bool, groups map[jobkind.Kind]*jobs.Job) PartitionPlan {
	set := v.settings
	var settled []jobkind.Kind
	if ps.settledWrite == instantOf(ps.LastWrite) {
		settled = ps.settledKinds.Kinds()
	}
	c := v.counters.evaluated(ps)
	verdict := partitionDue(c, set, now, settled...)
	pp := PartitionPlan{Key: ps.Key, Counters: ps.Counters}
	if detail {
		pp.Checks = verdict.checks
		chk, _, at := quietCheck(ps.Counters, set, now)
		pp.Checks = append(pp.Checks, chk)
		switch {
		case !verdict.due && len(settled) > 0 && partitionDue(c, set, now).due:
			pp.Wait = fmt.Sprintf("settled: a %s job found nothing to do here since its last write; waits for a write", joinKinds(settled))
		case !verdict.due && ps.quietMerged == spellOf(ps) && chk.Over:
			pp.Wait = "merged once this quiet spell; waits for a write"
		case !verdict.due && !at.IsZero():
			pp.Wait = chk.Note
		}
	}
	if !verdict.due && set.Strategy.Sorts() && ps.DataFiles > ps.SortedFiles && !ps.LastWrite.IsZero() {
		// Unsorted but still being written: its sort comes once it has
		// been quiet for sort_quiet_period.
		d.deferUntil(ps.LastWrite.Add(set.SortQuietPeriod))
	}
	quiet := false
	if !verdict.due {
		// Nothing else to do here: what the tier rule left, once the
		// partition has been quiet long enough (quiet.go).
		verdict.reason, verdict.due = quietDue(ps, set, now, d.deferUntil)
		verdict.kind, quiet = jobkind.Compact, verdict.due
	}
	switch {
	case !verdict.due:
		return pp
	case ps.inJob:
		pp.Wait = "in the table's running job"
		return pp
	case env.running != nil:
		// One job per table at a time: Finished picks again.
		pp.Wait = fmt.Sprintf("due; the table's %s job runs first (one job per table at a time)", env.running.Kind)
		return pp
	}
	if until := ps.cooldownUntil.time(); now.Before(until) {
		d.effects = append(d.effects, partitionEffect{ps: ps, cooling: true})
		d.deferUntil(until)
		pp.Wait = fmt.Sprintf("due; cooling down after its last job until %s", until.Format(time.TimeOnly))
		return pp
	}
	reason := verdict.reason
	reason.Partition = ps.Key
	effect := partitionEffect{ps: ps}
	if quietEnd := ps.LastWrite.Add(set.QuietPeriod); !quiet && now.Before(quietEnd) {
		waitingSince := ps.waitingSince.time()
		if waitingSince.IsZero() {
			waitingSince, effect.startWaiting = now, true
		}
		giveUpWaiting := waitingSince.Add(set.MaxQuietWait)
		if set.MaxQuietWait == 0 || now.Before(giveUpWaiting) {
			d.deferUntil(quietEnd)
			if set.MaxQuietWait > 0 {
				d.deferUntil(giveUpWaiting)
			}
			if effect.startWaiting {
				d.effects = append(d.effects, effect)
			}
			pp.Wait = fmt.Sprintf("written %s ago; waits for a quiet period of %s (at most max_quiet_wait %s)",
				now.Sub(ps.LastWrite).Round(time.Millisecond), set.QuietPeriod, set.MaxQuietWait)
			return pp
		}
		// Written continuously for max_quiet_wait: compact it beside the
		// writer rather than let it grow without bound.
		wait := fmt.Sprintf("still being written after waiting %s (max_quiet_wait)", set.MaxQuietWait)
		if reason.Note != "" {
			wait = reason.Note + "; " + wait
		}
		reason.Note = wait
	}
	effect.startWaiting = false
	effect.stopWaiting = ps.waitingSince != 0
	part := ps.partition()
	part.ApplyDeletes = verdict.applyDeletes
	if quiet {
		part.Quiet = true
		effect.quietMerge, effect.note = true, reason.Note
	}
	if effect.stopWaiting || effect.quietMerge {
		d.effects = append(d.effects, effect)
	}
	j := groups[verdict.kind]
	if j == nil {
		j = &jobs.Job{Kind: verdict.kind}
		groups[verdict.kind] = j
	}
	j.Partitions = append(j.Partitions, part)
	j.Reasons = append(j.Reasons, reason)
	pp.Due = true
	return pp
}

// complete fills in what every job of the table carries: the table, its
// settings, the snapshot it was planned on, its priority and input.
func (v tableView) complete(j jobs.Job, now time.Time) *jobs.Job {
	j.Table, j.Settings, j.ScheduledAt, j.BaseSnapshotID = v.table, v.settings, now, v.counters.snapshotID
	j.Priority = jobs.PriorityOf(j.Kind, j.Reasons)
	j.InputFiles, j.InputBytes = v.counters.input(j.Partitions)
	if j.Kind == jobkind.Sort {
		j.SortOrder = v.settings.SortOrder
	}
	return &j
}

// tableWideChecks are the table-wide thresholds as plan shows them,
// measured as the picker decided them.
func tableWideChecks(v tableView, expiry expiryPlan, expire tableWideDue, manifests Check, env environment, now time.Time) []Check {
	set, snaps := v.settings, v.snapshots
	ageCheck := Check{Threshold: jobs.SnapshotMaxAge, Limit: int64(set.SnapshotMaxAge / time.Second), Unit: "seconds"}
	if !expiry.decisive.IsZero() {
		// The snapshot the rule measures: retain_last and the branch and
		// tag heads keep the others whatever their age. Over whichever
		// rule the expiry names (the count bound goes further).
		ageCheck.Measured = int64(now.Sub(expiry.decisive) / time.Second)
		ageCheck.Over = expiry.decisive.Before(now.Add(-set.SnapshotMaxAge))
	}
	countCheck := Check{Threshold: jobs.SnapshotCount, Measured: int64(snaps.count()), Limit: int64(set.SnapshotCount),
		Unit: "snapshots", Over: expiry.due && expiry.reason.Threshold == jobs.SnapshotCount}
	switch {
	case expiry.due:
		note := fmt.Sprintf("expire snapshots older than %s beyond the newest %d; their files are deleted %s after the expiry (min_reader_margin)",
			expiry.olderThan.Round(time.Second), expiry.retainLast, set.MinReaderMargin)
		if expire.held != "" {
			note = "held: " + expire.held
		}
		ageCheck.Note, countCheck.Note = note, note
	case !expiry.next.IsZero():
		ageCheck.Note = fmt.Sprintf("next snapshot becomes expirable in %s", expiry.next.Sub(now).Round(time.Second))
	default:
		ageCheck.Note = fmt.Sprintf("nothing to expire beyond retain_last %d and branch/tag heads", set.RetainLast)
		if n := snaps.count(); n > 0 {
			ageCheck.Note += fmt.Sprintf(" (oldest snapshot %s old)", now.Sub(snaps.at(n-1)).Round(time.Second))
		}
	}
	if set.SnapshotCount > 0 && snaps.count() >= set.SnapshotCount && !countCheck.Over {
		countCheck.Note = fmt.Sprintf("held by retain_last %d: the count bound keeps at least that many", set.RetainLast)
	}
	orphans := Check{Threshold: jobs.OrphanMargin, Limit: int64(set.OrphanMargin / time.Second), Unit: "seconds"}
	switch {
	case !env.known:
		orphans.Note = fmt.Sprintf("not assessed here: needs a listing (reactor orphans --dry-run); run lists every %s, dry run: %v",
			set.OrphanListingInterval, !set.OrphanDelete)
	case !env.orphans.scheduled(set):
		orphans.Note = "not scheduled for this table (gc.enabled false, an S3 Tables table, or no orphan_listing_interval)"
	default:
		orphans.Note = fmt.Sprintf("%d tracked files no snapshot references yet; next full listing %s (tracking complete: %v)",
			len(env.tracked), env.orphans.nextListing.Format(time.DateTime), !env.trackingIncomplete)
	}
	return []Check{ageCheck, countCheck, manifests, orphans}
}

func joinKinds(kinds []jobkind.Kind) string {
	s := ""
	for i, k := range kinds {
		if i > 0 {
			s += " or "
		}
		s += k.String()
	}
	return s
}
