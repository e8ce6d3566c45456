package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/thresholds"
)

// Errors Apply returns. ErrUnknownTable and ErrNotWatched are bad input
// (dead-letter it); ErrCatalogUnavailable is transient (redeliver later).
var (
	ErrUnknownTable       = errors.New("unknown table")
	ErrNotWatched         = errors.New("namespace not watched")
	ErrCatalogUnavailable = errors.New("catalog unavailable")
	// ErrOtherCatalog: the event names a catalog this reactor does not
	// serve. Not an error of the event: another reactor may serve it.
	ErrOtherCatalog = errors.New("event for another catalog")
	// ErrNotOwned: another replica owns the table (Options.Owns); its
	// events go to it.
	ErrNotOwned = errors.New("table owned by another replica")
)

// Dispatcher receives scheduled jobs. It must not block and must not call
// back into the planner synchronously: the planner holds the table's lock.
type Dispatcher func(Job)

// Options configure a Planner.
type Options struct {
	Catalog catalog.Catalog
	// CatalogName is the name events must carry in "catalog" (when they
	// carry one at all) to be applied.
	CatalogName string
	Config      *thresholds.Config
	Dispatch    Dispatcher
	Logger      *slog.Logger
	Metrics     *metrics.Metrics
	// Now is the clock; tests leave it nil.
	Now func() time.Time
	// LocationRebuildInterval is the least time between two rebuilds of the
	// table-location index triggered by objects no table claims (default 30s).
	LocationRebuildInterval time.Duration
	// CommitObserved, when set, hears the qualified name of a table as soon
	// as a commit to it is observed (a commit event or a new metadata file
	// not seen before), before the planner loads it: the moment a
	// conflicting job's retry should try. It must not block.
	CommitObserved func(table string)
	// WarehousePrefixes are object-store locations (s3://bucket/prefix)
	// under which new tables may appear: an object there that no known
	// table claims refreshes the index at once and is held, not dropped
	// (see ErrUnclaimed). The parents of known tables' locations and the
	// namespaces' location properties are watched as well.
	WarehousePrefixes []string
	// MissRefreshInterval is the least time between two such refreshes
	// (default DefaultMissRefreshInterval).
	MissRefreshInterval time.Duration
	// Owns, when set, says which tables this replica owns (package
	// lease): only those are discovered, refreshed and given jobs; the
	// state of the others is dropped (Forget).
	Owns func(table string) bool
}

// Planner keeps per-table state and schedules jobs.
type Planner struct {
	cat      catalog.Catalog
	catName  string
	observed func(table string)
	owns     func(table string) bool
	cfg      atomic.Pointer[thresholds.Config]
	dispatch Dispatcher
	log      *slog.Logger
	met      *metrics.Metrics
	now      func() time.Time

	mu     sync.Mutex
	tables map[string]*tableState
	closed bool

	locations locationIndex
}

type tableState struct {
	mu       sync.Mutex
	ident    table.Identifier
	name     string
	counters tableCounters
	settings thresholds.Effective
	running  *Job
	timer    *time.Timer
	wakeAt   time.Time

	// unconfirmed holds data files seen in bucket notifications that no
	// applied snapshot references yet, by normalised location.
	unconfirmed        map[string]unconfirmedFile
	removed            removals
	trackingIncomplete bool

	// snapshots summarises the table's snapshot history for expiry.
	snapshots snapshotSummary

	// Scheduling state of table-wide jobs.
	expireCooldownUntil time.Time
	expireSettledAt     int64 // current snapshot when expiry last found nothing
	// pending are the batches of files expiry unlinked, earliest due
	// first; they live in the table's storage (package deletions) and are
	// listed once when the table is first seen.
	pending               []deletions.Ref
	pendingLoaded         bool
	pendingRetryAt        time.Time // a failed deletion pass waits until then
	manifestCooldownUntil time.Time
	orphanCooldownUntil   time.Time
	nextListing           time.Time       // first set when the table is first seen
	dryRunReported        map[string]bool // candidates a dry run already reported

	manifestSettledAt int // manifest count a no-op rewrite left; 0: none
	manifestFloorSaid int // manifest count the "cannot reach manifest_count" line was logged at
}

// New creates a planner.
func New(opts Options) *Planner {
	p := &Planner{
		cat:      opts.Catalog,
		catName:  opts.CatalogName,
		observed: opts.CommitObserved,
		owns:     opts.Owns,
		dispatch: opts.Dispatch,
		log:      opts.Logger,
		met:      opts.Metrics,
		now:      opts.Now,
		tables:   map[string]*tableState{},
	}
	p.locations.minRebuild = opts.LocationRebuildInterval
	if p.locations.minRebuild <= 0 {
		p.locations.minRebuild = 30 * time.Second
	}
	p.locations.configured = opts.WarehousePrefixes
	p.locations.missInterval = cmp.Or(opts.MissRefreshInterval, DefaultMissRefreshInterval)
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.met == nil {
		p.met = metrics.New()
	}
	if p.now == nil {
		p.now = time.Now
	}
	cfg := opts.Config
	if cfg == nil {
		cfg = thresholds.Default()
	}
	p.cfg.Store(cfg)
	return p
}

// SetConfig replaces the thresholds. Each table picks them up at its next
// evaluation; running jobs keep the settings they were scheduled with.
func (p *Planner) SetConfig(cfg *thresholds.Config) { p.cfg.Store(cfg) }

// Close stops every pending timer; no job is dispatched after it returns.
func (p *Planner) Close() {
	p.mu.Lock()
	p.closed = true
	states := make([]*tableState, 0, len(p.tables))
	for _, st := range p.tables {
		states = append(states, st)
	}
	p.mu.Unlock()
	for _, st := range states {
		st.mu.Lock()
		if st.timer != nil {
			st.timer.Stop()
			st.timer = nil
		}
		st.mu.Unlock()
	}
}

func (p *Planner) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Apply brings the event's table up to its current snapshot and schedules
// the jobs its partitions now need. When it returns nil the event is fully
// applied and may be acknowledged.
func (p *Planner) Apply(ctx context.Context, ev events.CommitEvent) error {
	if err := p.CheckCommit(ev); err != nil {
		return err
	}
	if p.CommitCovered(ev) {
		p.log.Debug("event for a snapshot already applied", "table", ev.QualifiedName(), "snapshot_id", ev.SnapshotID)
		return nil
	}
	p.commitObserved(ev.QualifiedName())
	_, err := p.Refresh(ctx, append(ev.NamespaceLevels(), ev.Table))
	return err
}

// ownsTable reports whether this replica owns the table (always, without
// Options.Owns).
func (p *Planner) ownsTable(name string) bool { return p.owns == nil || p.owns(name) }

// Forget drops the state of the tables sel selects (their leases moved to
// another replica): timers stopped, nothing more scheduled for them here.
func (p *Planner) Forget(sel func(table string) bool) int {
	p.mu.Lock()
	var gone []*tableState
	for name, st := range p.tables {
		if sel(name) {
			gone = append(gone, st)
			delete(p.tables, name)
		}
	}
	p.mu.Unlock()
	for _, st := range gone {
		st.mu.Lock()
		if st.timer != nil {
			st.timer.Stop()
			st.timer = nil
		}
		st.mu.Unlock()
		p.met.ForgetTable(st.name)
	}
	return len(gone)
}

func (p *Planner) commitObserved(name string) {
	if p.observed != nil {
		p.observed(name)
	}
}

// Observe brings the planner's state for tbl up to tbl's current snapshot
// and evaluates its partitions. Apply calls it after loading the table; the
// executor's pool calls it (through Finished) with the table it committed.
func (p *Planner) Observe(ctx context.Context, tbl *table.Table) error {
	name := strings.Join(tbl.Identifier(), ".")
	st := p.state(tbl.Identifier(), name)
	st.mu.Lock()
	defer st.mu.Unlock()
	return p.observeLocked(ctx, st, tbl)
}

func (p *Planner) observeLocked(ctx context.Context, st *tableState, tbl *table.Table) error {
	st.settings = p.cfg.Load().For(st.name, tbl.Properties())
	start := p.now()
	stats, err := st.counters.advance(ctx, tbl, sizesOf(st.settings))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Reading manifests failed: storage or catalog trouble, not the
		// event's fault. Forget the partial state so the next try rebuilds.
		st.counters.reset(sizesOf(st.settings))
		return fmt.Errorf("%w: update %s: %w", ErrCatalogUnavailable, st.name, err)
	}
	if !stats.stale {
		st.snapshots = summarizeSnapshots(tbl.Metadata())
		if loc := tbl.MetadataLocation(); loc != "" {
			st.counters.metadataLocation = normalizeLocation(loc)
		}
	}
	if !st.pendingLoaded {
		p.loadPendingLocked(ctx, st, tbl)
	}
	p.met.SetSnapshots(st.name, st.snapshots.count(), st.snapshots.oldest())
	st.confirmLocked(stats.added)
	if st.unconfirmed != nil {
		p.met.UnconfirmedFiles.WithLabelValues(st.name).Set(float64(len(st.unconfirmed)))
	}
	if stats.rebuilt {
		p.met.StateRebuilds.WithLabelValues(st.name).Inc()
		p.log.Info("table state built from current snapshot", "table", st.name,
			"snapshot_id", st.counters.snapshotID, "partitions", len(st.counters.partitions),
			"manifests_read", stats.manifestsRead, "duration", p.now().Sub(start))
	} else if stats.snapshots > 0 {
		p.log.Debug("table state advanced", "table", st.name, "snapshot_id", st.counters.snapshotID,
			"snapshots", stats.snapshots, "manifests_read", stats.manifestsRead, "changed_partitions", len(stats.changed))
	}
	tot := st.counters.totals()
	p.met.DataFiles.WithLabelValues(st.name).Set(float64(tot.DataFiles))
	p.met.SmallFiles.WithLabelValues(st.name).Set(float64(tot.SmallFiles))
	p.met.DeleteFiles.WithLabelValues(st.name, "position").Set(float64(tot.PositionDeleteFiles))
	p.met.DeleteFiles.WithLabelValues(st.name, "equality").Set(float64(tot.EqualityDeleteFiles))
	p.met.DeleteFiles.WithLabelValues(st.name, "deletion_vector").Set(float64(tot.DeletionVectors))
	ratio := 0.0
	if tot.DataFiles > 0 {
		ratio = float64(tot.DeleteFiles()) / float64(tot.DataFiles)
	}
	p.met.DeleteFileRatio.WithLabelValues(st.name).Set(ratio)
	p.evaluateLocked(st)
	return nil
}

func (p *Planner) state(ident table.Identifier, name string) *tableState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.tables[name]
	if !ok {
		st = &tableState{ident: ident, name: name}
		p.tables[name] = st
	}
	return st
}

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
		parts   []Partition
		reasons []Reason
		wake    time.Time
	)
	deferUntil := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	// Metadata over its bounds comes first: a compaction committing on a
	// history that keeps growing loses every race against the writer, and
	// the writer's own commits slow down with it (issue 13).
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
	var deleteParts, sortParts []Partition
	var deleteReasons, sortReasons []Reason
	for _, k := range keys {
		ps := st.counters.partitions[k]
		var settled []JobKind
		if ps.settledWrite == instantOf(ps.LastWrite) {
			settled = ps.settledKinds.kinds()
		}
		_, kind, reason, applyDeletes, due := partitionDue(ps.Counters, set, now, settled...)
		if !due && set.Strategy.Sorts() && ps.DataFiles > ps.SortedFiles && !ps.LastWrite.IsZero() {
			// Unsorted but still being written: its sort comes once it
			// has been quiet for sort_quiet_period.
			deferUntil(ps.LastWrite.Add(set.SortQuietPeriod))
		}
		if !due || ps.inJob {
			continue
		}
		if st.running != nil {
			// One job per table at a time: Finished re-evaluates.
			continue
		}
		if until := ps.cooldownUntil.time(); now.Before(until) {
			p.log.Debug("partition over threshold, cooling down", "table", st.name, "partition", ps.Key,
				"reason", "cooldown", "until", until)
			deferUntil(until)
			continue
		}
		reason.Partition = ps.Key
		if quietEnd := ps.LastWrite.Add(set.QuietPeriod); now.Before(quietEnd) {
			if ps.waitingSince == 0 {
				ps.waitingSince = instantOf(now)
				p.log.Info("partition over threshold but still being written; waiting for it to cool",
					"table", st.name, "partition", ps.Key, "reason", "quiet_period",
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
		switch kind {
		case KindRewritePositionDeletes:
			deleteParts = append(deleteParts, part)
			deleteReasons = append(deleteReasons, reason)
			continue
		case KindSort:
			sortParts = append(sortParts, part)
			sortReasons = append(sortReasons, reason)
			continue
		}
		parts = append(parts, part)
		reasons = append(reasons, reason)
	}
	if len(parts) == 0 && len(deleteParts) > 0 {
		parts, reasons = deleteParts, deleteReasons
		for _, part := range parts {
			st.counters.partitions[part.Key].inJob = true
		}
		p.scheduleLocked(st, KindRewritePositionDeletes, parts, reasons, now)
		return
	}
	if len(parts) == 0 && len(sortParts) > 0 {
		for _, part := range sortParts {
			st.counters.partitions[part.Key].inJob = true
		}
		p.scheduleLocked(st, KindSort, sortParts, sortReasons, now, func(j *Job) { j.SortOrder = set.SortOrder })
		return
	}
	if len(parts) > 0 {
		for _, part := range parts {
			st.counters.partitions[part.Key].inJob = true
		}
		p.scheduleLocked(st, KindCompact, parts, reasons, now)
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
	case due && (reason.Threshold == "snapshot_count" || !now.Before(st.expireCooldownUntil)):
		p.scheduleLocked(st, KindExpireSnapshots, nil, []Reason{reason}, now, func(j *Job) {
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
			p.scheduleLocked(st, KindDeleteExpiredFiles, nil, job.Reasons, now, func(j *Job) { j.PendingDeletes = job.PendingDeletes })
			return true
		}
	}
	if p.manifestRewriteDueLocked(st) {
		if now.Before(st.manifestCooldownUntil) {
			deferUntil(st.manifestCooldownUntil)
		} else {
			p.scheduleLocked(st, KindRewriteManifests, nil, []Reason{{Partition: tableWide, Threshold: "manifest_count",
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
		p.scheduleLocked(st, KindRemoveOrphans, nil, job.Reasons, now, func(j *Job) {
			j.OrphanSource, j.OrphanCandidates = job.OrphanSource, job.OrphanCandidates
		})
		return true
	}
	return false
}

// deletionPassLocked returns the job that deletes the pending batches due
// by now, or nil (arming the earliest due time).
func (p *Planner) deletionPassLocked(st *tableState, now time.Time, deferUntil func(time.Time)) *Job {
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
	return &Job{PendingDeletes: due, Reasons: []Reason{{Partition: tableWide, Threshold: "min_reader_margin",
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
				p.log.Info("pending deletions found", "table", st.name, "batches", len(refs),
					"earliest_due", refs[0].Due)
			}
			return
		}
	}
	p.log.Warn("could not list the table's pending deletions; will retry", "table", st.name, "error", err)
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
func (p *Planner) orphanJobLocked(st *tableState, now time.Time, deferUntil func(time.Time)) *Job {
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
		return &Job{OrphanSource: OrphansFromListing, Reasons: []Reason{{Partition: tableWide, Threshold: "orphan_listing_interval",
			Measured: int64(now.Sub(st.nextListing.Add(-set.OrphanListingInterval)) / time.Second),
			Limit:    int64(set.OrphanListingInterval / time.Second),
			Note:     fmt.Sprintf("full listing (tracking complete: %v)", !st.trackingIncomplete)}}}
	}
	deferUntil(st.nextListing)
	cutoff := now.Add(-set.OrphanMargin)
	var cands []OrphanCandidate
	for _, f := range st.unconfirmed {
		if f.created.Before(cutoff) {
			cands = append(cands, OrphanCandidate{Location: f.location, Size: f.size, Created: f.created})
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
			fresh = fresh || !st.dryRunReported[normalizeLocation(c.Location)]
		}
		if !fresh {
			return nil // a dry run reported all of them already
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Created.Before(cands[j].Created) })
	return &Job{OrphanSource: OrphansFromTracking, OrphanCandidates: cands, Reasons: []Reason{{Partition: tableWide,
		Threshold: "orphan_margin", Measured: int64(len(cands)), Limit: int64(set.OrphanMargin / time.Second),
		Note: fmt.Sprintf("%d tracked files unreferenced for longer than %s", len(cands), set.OrphanMargin)}}}
}

// scheduleLocked creates the job, records it as the table's running one and
// dispatches it. with sets kind-specific fields before anyone sees the job.
func (p *Planner) scheduleLocked(st *tableState, kind JobKind, parts []Partition, reasons []Reason, now time.Time, with ...func(*Job)) {
	if !p.ownsTable(st.name) {
		// Its lease moved on; the new owner schedules it.
		for _, part := range parts {
			if ps, ok := st.counters.partitions[part.Key]; ok {
				ps.inJob = false
			}
		}
		return
	}
	job := Job{
		ID:             uuid.NewString(),
		Kind:           kind,
		Table:          st.ident,
		TableName:      st.name,
		Partitions:     parts,
		Reasons:        reasons,
		Settings:       st.settings,
		ScheduledAt:    now,
		BaseSnapshotID: st.counters.snapshotID,
	}
	job.InputFiles, job.InputBytes = st.counters.input(parts)
	for _, f := range with {
		f(&job)
	}
	st.running = &job
	p.met.JobsScheduled.WithLabelValues(string(job.Kind)).Inc()
	p.log.Info("job scheduled", "table", st.name, "job_id", job.ID, "kind", job.Kind,
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
	st.timer = time.AfterFunc(at.Sub(p.now()), func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.timer = nil
		p.evaluateLocked(st)
	})
}

// Finished records a job's result: cool-downs, and when it committed, the
// committed table's state (so reactor's own commit is accounted for without
// waiting for the next event, and cannot schedule itself again).
func (p *Planner) Finished(ctx context.Context, job Job, res Result) {
	if !p.ownsTable(job.TableName) {
		p.log.Info("job finished for a table this replica no longer owns; its owner plans it afresh",
			"table", job.TableName, "job_id", job.ID, "kind", job.Kind, "outcome", res.Outcome.String())
		return
	}
	st := p.state(job.Table, job.TableName)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.running != nil && st.running.ID == job.ID {
		st.running = nil
	}
	now := p.now()
	if job.Kind == KindExpireSnapshots {
		// An expiry waits a cool-down before the next age-based one (the
		// snapshot bound does not wait); one that found nothing settles
		// until the next commit.
		switch res.Outcome {
		case GaveUp:
			st.expireCooldownUntil = now.Add(job.Settings.ConflictCooldown)
		case Failed, Succeeded:
			st.expireCooldownUntil = now.Add(job.Settings.Cooldown)
		case Noop:
			st.expireSettledAt = st.counters.snapshotID
		}
		st.pending = mergeRefs(st.pending, res.PendingDeletes)
	}
	if job.Kind == KindDeleteExpiredFiles {
		if res.Outcome == Failed {
			st.pendingRetryAt = now.Add(job.Settings.Cooldown)
		}
		// The pass's batches are done, but for what it left (a failure,
		// a batch not due after all, batches rebuilt from an intent).
		done := map[string]bool{}
		for _, r := range job.PendingDeletes {
			done[r.Location] = true
		}
		kept := st.pending[:0]
		for _, r := range st.pending {
			if !done[r.Location] {
				kept = append(kept, r)
			}
		}
		st.pending = mergeRefs(kept, res.PendingDeletes)
	}
	if job.Kind == KindRemoveOrphans {
		st.orphanCooldownUntil = now.Add(job.Settings.Cooldown)
		if job.OrphanSource == OrphansFromListing && res.Outcome != Failed {
			st.nextListing = now.Add(job.Settings.OrphanListingInterval)
		}
		if !job.Settings.OrphanDelete && res.Outcome != Failed {
			if st.dryRunReported == nil {
				st.dryRunReported = map[string]bool{}
			}
			for _, c := range job.OrphanCandidates {
				st.dryRunReported[normalizeLocation(c.Location)] = true
			}
		}
		for _, loc := range res.Settled {
			delete(st.unconfirmed, normalizeLocation(loc))
			delete(st.dryRunReported, normalizeLocation(loc))
		}
		p.deferOrphansLocked(st, res.Deferred)
	}
	if job.Kind == KindRewriteManifests {
		st.manifestCooldownUntil = now.Add(job.Settings.Cooldown)
		if res.Outcome == GaveUp {
			st.manifestCooldownUntil = now.Add(job.Settings.ConflictCooldown)
		}
		if res.Outcome == Noop {
			st.manifestSettledAt = st.counters.dataManifests
		}
	}
	for _, part := range job.Partitions {
		ps, ok := st.counters.partitions[part.Key]
		if !ok {
			continue
		}
		ps.inJob = false
		if why, idle := res.NothingToDo[part.Key]; idle && res.Outcome == Succeeded {
			// The job changed other partitions but found nothing to do
			// in this one: settle it like a no-op.
			p.settleLocked(st, ps, job, why)
			ps.cooldownUntil = instantOf(now.Add(job.Settings.Cooldown))
			continue
		}
		switch {
		case job.Kind == KindSort && res.Outcome == Failed:
			// An order that does not fit the schema fails every time:
			// try again on the sort cadence, not every cool-down.
			ps.cooldownUntil = instantOf(now.Add(max(job.Settings.Cooldown, job.Settings.SortQuietPeriod)))
		case res.Outcome == GaveUp:
			ps.cooldownUntil = instantOf(now.Add(job.Settings.ConflictCooldown))
		case res.Outcome == Noop:
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
	st.counters.markOffloaded(res.OwnSnapshots, job.Kind == KindSort)
	if res.Table != nil {
		if err := p.observeLocked(ctx, st, res.Table); err != nil {
			p.log.Warn("could not apply reactor's own commit to table state; the next event will",
				"table", st.name, "job_id", job.ID, "error", err)
		}
		return
	}
	p.evaluateLocked(st)
}

// settleLocked records that jobs of job's kind find nothing to do in ps
// until it is written again, and says so: a partition over a threshold
// that no job of this kind can fix is left alone rather than rewritten
// into the same files every cool-down.
func (p *Planner) settleLocked(st *tableState, ps *partitionState, job Job, why string) {
	if ps.settledWrite != instantOf(ps.LastWrite) {
		ps.settledKinds = 0
	}
	ps.settledWrite = instantOf(ps.LastWrite)
	ps.settledKinds = ps.settledKinds.with(job.Kind)
	p.log.Info("partition settled: not scheduled for this kind again until it is written", "table", st.name,
		"partition", ps.Key, "kind", job.Kind, "job_id", job.ID, "reason", why)
}

// PartitionCounters is a snapshot of one partition's counters (for the
// demo's progress line, plan output and tests).
type PartitionCounters struct {
	Key string
	Counters
}

// TableCounters returns the counters of every partition of the named table
// ("namespace.table"), sorted by key, and the snapshot they describe.
func (p *Planner) TableCounters(name string) (int64, []PartitionCounters) {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return 0, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]PartitionCounters, 0, len(st.counters.partitions))
	for _, ps := range st.counters.partitions {
		out = append(out, PartitionCounters{Key: ps.Key, Counters: ps.Counters})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return st.counters.snapshotID, out
}
