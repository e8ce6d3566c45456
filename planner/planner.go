package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/manifestread"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/tablename"
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
	// ErrNotOwned: another replica owns the table (Options.Ownership); its
	// events go to it.
	ErrNotOwned = errors.New("table owned by another replica")
)

// Dispatcher receives scheduled jobs. It must not block and must not call
// back into the planner synchronously: the planner holds the table's lock.
type Dispatcher func(jobs.Job)

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
	// AfterFunc arms the wake-up timer of a table's next deadline (a
	// quiet period ending, a cool-down, an expiry, a quiet merge): f runs
	// after d. Nil: time.AfterFunc. A test with a fake Now passes its
	// fake clock's (fakeclock_test.go).
	AfterFunc func(d time.Duration, f func()) Timer
	// LocationRebuildInterval is the least time between two rebuilds of the
	// table-location index triggered by objects no table claims (default 30s).
	LocationRebuildInterval time.Duration
	// WarehousePrefixes are object-store locations (s3://bucket/prefix)
	// under which new tables may appear: an object there that no known
	// table claims refreshes the index at once and is held, not dropped
	// (see ErrUnclaimed). The parents of known tables' locations and the
	// namespaces' location properties are watched as well.
	WarehousePrefixes []string
	// MissRefreshInterval is the least time between two such refreshes
	// (default DefaultMissRefreshInterval).
	MissRefreshInterval time.Duration
	// Ownership, when set, says which tables this replica owns (package
	// lease; nil: all of them): only those are discovered, refreshed and
	// given jobs; the state of the others is dropped (Forget).
	Ownership ownership.Tables
	// Records verifies the records of the snapshots reactor committed
	// through Spark (nil: none is trusted; they read as other writers').
	Records *deletions.Keyring
	// Tables, when set, learns every table's roots from each location
	// index refresh: the registry the deletion rule asks (package scope).
	Tables *scope.Known
}

// Planner keeps per-table state and schedules jobs.
type Planner struct {
	cat      catalog.Catalog
	catName  string
	owns     ownership.Tables
	cfg      atomic.Pointer[thresholds.Config]
	dispatch Dispatcher
	log      *slog.Logger
	met      *metrics.Metrics
	now      func() time.Time
	after    func(time.Duration, func()) Timer

	mu     sync.Mutex
	tables map[string]*tableState
	closed bool

	locations locationIndex
	keys      *deletions.Keyring
	known     *scope.Known
	// manifests reads the tables' manifests, each distinct Avro schema
	// parsed once (package manifestread).
	manifests *manifestread.Reader
}

type tableState struct {
	mu       sync.Mutex
	table    tablename.Name
	counters tableCounters
	settings thresholds.Effective
	running  *jobs.Job
	timer    Timer
	wakeAt   time.Time

	// unconfirmed holds data files seen in bucket notifications that no
	// applied snapshot references yet, by normalised location.
	unconfirmed        map[string]unconfirmedFile
	removed            removals
	trackingIncomplete bool

	// snapshots summarises the table's snapshot history for expiry.
	snapshots snapshotSummary

	// The table-wide jobs' scheduling state (tablewide.go).
	expiry    expiryState
	manifests manifestState
	orphans   orphanState
	// offloadedLoaded: the snapshots reactor committed through Spark were
	// read from the table's storage (offloaded.go).
	offloadedLoaded bool
}

// view is the table as the picker reads it (pick.go).
func (st *tableState) view() tableView {
	return tableView{table: st.table, counters: &st.counters, snapshots: st.snapshots, settings: st.settings}
}

// environment is the state the picker needs beyond the table's files, as
// this planner holds it.
func (st *tableState) environment() environment {
	return environment{known: true, running: st.running, expiry: st.expiry, manifests: st.manifests, orphans: st.orphans,
		tracked: st.unconfirmed, trackingIncomplete: st.trackingIncomplete}
}

// New creates a planner.
func New(opts Options) *Planner {
	p := &Planner{
		cat:      opts.Catalog,
		catName:  opts.CatalogName,
		owns:     opts.Ownership,
		dispatch: opts.Dispatch,
		log:      opts.Logger,
		met:      opts.Metrics,
		now:      opts.Now,
		after:    opts.AfterFunc,
		tables:   map[string]*tableState{},
		keys:     opts.Records,
		known:    opts.Tables,

		manifests: manifestread.New(0),
	}
	if p.keys == nil {
		p.keys = deletions.EphemeralKeyring()
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
	if p.after == nil {
		p.after = func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
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
	_, err := p.Refresh(ctx, ev.Name())
	return err
}

// ownsTable reports whether this replica owns the table (always, without
// Options.Ownership).
func (p *Planner) ownsTable(name string) bool { return p.owns == nil || p.owns.Owns(name) }

// Forget drops the state of the tables sel selects (their leases moved to
// another replica): timers stopped, nothing more scheduled for them here.
func (p *Planner) Forget(sel func(name string) bool) int {
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
		p.met.ForgetTable(st.table.String())
	}
	return len(gone)
}

// Observe brings the planner's state for tbl up to tbl's current snapshot
// and evaluates its partitions. Apply calls it after loading the table; the
// executor's pool calls it (through Finished) with the table it committed.
func (p *Planner) Observe(ctx context.Context, tbl *table.Table) error {
	st := p.state(tablename.Of(tbl.Identifier()))
	st.mu.Lock()
	defer st.mu.Unlock()
	return p.observeLocked(ctx, st, tbl)
}

func (p *Planner) observeLocked(ctx context.Context, st *tableState, tbl *table.Table) error {
	st.settings = p.cfg.Load().For(st.table.String(), tbl.Properties())
	if p.known != nil {
		// The deletion rule learns a table's roots as soon as they change.
		p.known.Set(scope.RootsOf(st.table.String(), tbl.Metadata()))
	}
	if gc := scope.GCEnabled(tbl.Metadata()); gc == st.orphans.gcDisabled {
		st.orphans.gcDisabled = !gc
		if !gc {
			p.log.Info("the table's gc.enabled is false: expiry deletes nothing and orphan cleanup is not scheduled",
				"table", st.table.String(), "gc.enabled", tbl.Properties()[scope.GCEnabledKey])
		}
	}
	if why := scope.S3Tables(tbl.Metadata()); (why != "") != st.orphans.s3Tables {
		st.orphans.s3Tables = why != ""
		if st.orphans.s3Tables {
			p.log.Info("S3 Tables table: compaction and the metadata jobs run; expiry deletes nothing and orphan cleanup is not scheduled (AWS's unreferenced file removal deletes its files)",
				"table", st.table.String(), "reason", why)
		}
	}
	if !st.offloadedLoaded {
		p.loadOffloadedLocked(ctx, st, tbl)
	}
	start := p.now()
	stats, err := st.counters.advance(ctx, tbl, sizesOf(st.settings))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Reading manifests failed: storage or catalog trouble, not the
		// event's fault. Forget the partial state so the next try rebuilds.
		st.counters.reset(sizesOf(st.settings))
		return fmt.Errorf("%w: update %s: %w", ErrCatalogUnavailable, st.table.String(), err)
	}
	if !stats.stale {
		st.snapshots = summarizeSnapshots(tbl.Metadata())
		if loc := tbl.MetadataLocation(); loc != "" {
			st.counters.metadataLocation = location.Identity(loc)
		}
	}
	if !st.expiry.pendingLoaded {
		p.loadPendingLocked(ctx, st, tbl)
	}
	p.met.SetSnapshots(st.table.String(), st.snapshots.count(), st.snapshots.oldest())
	st.confirmLocked(stats.added)
	if st.unconfirmed != nil {
		p.met.UnconfirmedFiles.WithLabelValues(st.table.String()).Set(float64(len(st.unconfirmed)))
	}
	if stats.rebuilt {
		p.met.StateRebuilds.WithLabelValues(st.table.String()).Inc()
		p.log.Info("table state built from current snapshot", "table", st.table.String(),
			"snapshot_id", st.counters.snapshotID, "partitions", len(st.counters.partitions),
			"manifests_read", stats.manifestsRead, "duration", p.now().Sub(start))
	} else if stats.snapshots > 0 {
		p.log.Debug("table state advanced", "table", st.table.String(), "snapshot_id", st.counters.snapshotID,
			"snapshots", stats.snapshots, "manifests_read", stats.manifestsRead, "changed_partitions", len(stats.changed))
	}
	tot := st.counters.totals()
	p.met.DataFiles.WithLabelValues(st.table.String()).Set(float64(tot.DataFiles))
	p.met.SmallFiles.WithLabelValues(st.table.String()).Set(float64(tot.SmallFiles))
	p.met.IdealDataFiles.WithLabelValues(st.table.String()).Set(float64(st.counters.idealDataFiles(st.settings.TargetFileSize)))
	p.met.DeleteFiles.WithLabelValues(st.table.String(), history.PositionDelete.MetricLabel()).Set(float64(tot.PositionDeleteFiles))
	p.met.DeleteFiles.WithLabelValues(st.table.String(), history.EqualityDelete.MetricLabel()).Set(float64(tot.EqualityDeleteFiles))
	p.met.DeleteFiles.WithLabelValues(st.table.String(), "deletion_vector").Set(float64(tot.DeletionVectors))
	ratio := 0.0
	if tot.DataFiles > 0 {
		ratio = float64(tot.DeleteFiles()) / float64(tot.DataFiles)
	}
	p.met.DeleteFileRatio.WithLabelValues(st.table.String()).Set(ratio)
	p.evaluateLocked(st)
	return nil
}

func (p *Planner) state(t tablename.Name) *tableState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.tables[t.String()]
	if !ok {
		st = &tableState{table: t}
		st.counters.manifests = p.manifests
		p.tables[t.String()] = st
	}
	return st
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

// Timer is what the planner needs of a wake-up timer (Options.AfterFunc):
// *time.Timer is one.
type Timer interface {
	// Stop prevents the timer from firing; false if it already fired or
	// was stopped.
	Stop() bool
}
