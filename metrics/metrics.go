// Package metrics owns reactor's Prometheus collectors: one Metrics value per
// process (or per test), registered on its own registry, so nothing is
// global. Other packages record through it; it must not decide anything.
//
//   - metrics.go: [Metrics] and [New], every collector, the outcome label
//     values, [Metrics.ForgetTable].
//   - zero.go: the series whose label values are known start at 0 (every job
//     kind from package jobkind, every outcome, [ObjectOutcomes]).
//   - http.go: [Metrics.Handler], /metrics with the Go and process collectors;
//     ready.go reactor_ready, /readyz's answer read at scrape time.
//   - Gauges read when Prometheus scrapes, from a source the worker sets:
//     refresh.go the event path's refresh lag ([RefreshState]), lease.go
//     which replica owns each shard, snapshots.go each table's snapshot count
//     and oldest snapshot's age, catalog_calls.go the catalog's calls by
//     kind (package catalogs counts them).
//   - surfaces.go: [Surfaces], the collectors of the hardened surfaces (status
//     pages' credential, streams at their limits, unknown table names,
//     object-store timeouts, size limits).
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Event outcomes, the values of the outcome label of reactor_events_total.
const (
	OutcomeApplied       = "applied"
	OutcomeMalformed     = "malformed"
	OutcomeUnknownTable  = "unknown_table"
	OutcomeNotWatched    = "namespace_not_watched"
	OutcomeRetry         = "retry"
	OutcomeOtherCatalog  = "other_catalog"
	OutcomeTestEvent     = "test_event"
	OutcomeDeadLetterErr = "dead_letter_failed"
)

// Job outcomes, the values of the outcome label of reactor_jobs_total.
const (
	JobSucceeded = "succeeded"
	JobNoop      = "noop"
	JobGaveUp    = "gave_up"
	JobFailed    = "failed"
)

// Metrics holds every collector reactor exports.
type Metrics struct {
	Registry *prometheus.Registry

	registerRuntimeOnce sync.Once

	Events           *prometheus.CounterVec
	JobsScheduled    *prometheus.CounterVec
	Jobs             *prometheus.CounterVec
	JobDuration      *prometheus.HistogramVec
	CommitConflicts  *prometheus.CounterVec
	CommitRetries    *prometheus.CounterVec
	StateRebuilds    *prometheus.CounterVec
	FilesRewritten   *prometheus.CounterVec
	FilesAdded       *prometheus.CounterVec
	ConfigReloads    *prometheus.CounterVec
	Objects          *prometheus.CounterVec
	UnconfirmedFiles *prometheus.GaugeVec
	DataFiles        *prometheus.GaugeVec
	SmallFiles       *prometheus.GaugeVec
	IdealDataFiles   *prometheus.GaugeVec
	OrphanCandidates *prometheus.GaugeVec
	OrphansRefused   *prometheus.CounterVec
	// DeletionsRefused and RecordsRefused: the deletion rule at work
	// (docs/design.md#rule-own-table, #rule-own-records).
	DeletionsRefused *prometheus.CounterVec
	RecordsRefused   *prometheus.CounterVec
	// Polls counts the polling safety net's checks by outcome.
	Polls           *prometheus.CounterVec
	DeleteFiles     *prometheus.GaugeVec
	DeleteFileRatio *prometheus.GaugeVec
	// Spark backend (jobs also count in Jobs and JobDuration).
	SparkLocalRuns   *prometheus.CounterVec
	SparkInterrupts  *prometheus.CounterVec
	SparkUnconfirmed prometheus.Counter
	// Refreshes counts table refreshes (catalog loads) of the event path
	// by result; EventsCoalesced the events acknowledged without a load of
	// their own (already covered, or covered by a refresh shared with
	// other events of the table).
	// JobQueue is the jobs waiting for a slot, by class (urgent,
	// background); JobsRunning the jobs holding one; JobQueueWait how long
	// jobs waited, by kind.
	JobQueue        *prometheus.GaugeVec
	JobsRunning     prometheus.Gauge
	JobQueueWait    *prometheus.HistogramVec
	Refreshes       *prometheus.CounterVec
	EventsCoalesced prometheus.Counter
	// Table leases among replicas: shards in all, held here, live
	// replicas, and leases acquired, released and lost.
	LeaseShards     prometheus.Gauge
	LeaseShardsHeld prometheus.Gauge
	LeaseMembers    prometheus.Gauge
	LeaseHandovers  *prometheus.CounterVec
	// EventsForwarded counts events (and notification copies) sent on to
	// the replica owning their table, by source.
	EventsForwarded *prometheus.CounterVec
	// FastLanes is the hot tables with a fast lane open here;
	// FastLaneLooks counts the events a lane saw, by what it did
	// (urgent: asked for a refresh at the head of the line; covered: the
	// state held the event already).
	FastLanes     prometheus.Gauge
	FastLaneLooks *prometheus.CounterVec
	// CatalogReachable is 1 while the catalog answers reactor's probe
	// and 0 while it does not (down at start or later: reactor waits).
	CatalogReachable prometheus.Gauge
	snapshots        *snapshotGauges
	refresh          *refreshGauges
	catalogCalls     *catalogCalls
	leaseOwners      *leaseOwners
	// Surfaces: status page credentials, stream limits, unknown tables,
	// object-store timeouts, size limits (surfaces.go).
	Surfaces
}

// New creates the collectors on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_events_total",
			Help: "Events received, by source and outcome.",
		}, []string{"source", "outcome"}),
		JobsScheduled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_jobs_scheduled_total",
			Help: "Jobs the planner scheduled, by kind.",
		}, []string{"kind"}),
		Jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_jobs_total",
			Help: "Jobs finished, by kind and outcome (succeeded, noop, gave_up, failed).",
		}, []string{"kind", "outcome"}),
		JobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reactor_job_duration_seconds",
			Help:    "Wall time of finished jobs, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}, []string{"kind"}),
		CommitConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_commit_conflicts_total",
			Help: "Commit attempts that lost a race with another writer, by table.",
		}, []string{"table"}),
		CommitRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_commit_retries_total",
			Help: "Commit attempts retried after a conflict, by table.",
		}, []string{"table"}),
		StateRebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_state_rebuilds_total",
			Help: "Full rebuilds of a table's partition counters (first event or an unbridgeable gap), by table.",
		}, []string{"table"}),
		FilesRewritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_rewritten_data_files_total",
			Help: "Data files replaced by compaction, by table.",
		}, []string{"table"}),
		FilesAdded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_added_data_files_total",
			Help: "Data files written by compaction, by table.",
		}, []string{"table"}),
		ConfigReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_config_reloads_total",
			Help: "Thresholds file reloads, by result (applied; error: the file was rejected; internal_error: it made reactor panic, recovered, and was rejected).",
		}, []string{"result"}),
		Objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_objects_total",
			Help: "Objects from bucket notifications, by outcome (commit, tracked, confirmed, removed, ignored, refused, held, outside, tracking_full).",
		}, []string{"outcome"}),
		UnconfirmedFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_unconfirmed_files",
			Help: "Data files seen in bucket notifications that no snapshot references yet, by table.",
		}, []string{"table"}),
		DataFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_table_data_files",
			Help: "Live data files in the table's current snapshot, as tracked by the planner.",
		}, []string{"table"}),
		SmallFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_table_small_files",
			Help: "Live data files below the small-file size, as tracked by the planner.",
		}, []string{"table"}),
		IdealDataFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_table_ideal_data_files",
			Help: "Data files the table would hold with every partition's bytes in files of the target size (per partition ceil(bytes / target_file_size)): what reactor_table_data_files is compared with.",
		}, []string{"table"}),
		OrphanCandidates: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_table_orphan_candidates",
			Help: "Orphan files the table's last cleanup found and left in place (all of them in a dry run).",
		}, []string{"table"}),
		OrphansRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_orphans_refused_total",
			Help: "Orphan candidates refused (never deleted), by table and reason (not_canonical, outside_data_location, outside_table_location, hidden, stat_failed, not_a_file, no_last_modified, stat_unsupported).",
		}, []string{"table", "reason"}),
		DeletionsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_deletions_refused_total",
			Help: "Files the deletion rule kept, by table and the rule they broke (outside_table: under none of the table's own roots; other_table: another known table claims them; gc_disabled: the table's gc.enabled is false; partial_metadata: the catalog left snapshots out; s3_tables: the table lies in an S3 table bucket, which AWS maintains; not_canonical). Each is logged and never retried.",
		}, []string{"table", "rule"}),
		RecordsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_records_refused_total",
			Help: "reactor records in a table's storage (pending deletions, expiry and output intents, Spark commit records) refused and left in place, by table and reason (unsigned, unknown_key, bad_signature, other_table, wrong_kind, too_large, malformed); each counted once per process.",
		}, []string{"table", "reason"}),
		Polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_polls_total",
			Help: "Checks of the polling safety net (refresh_interval), by outcome: unchanged (the catalog names the metadata file the state was built from; nothing read), changed (a commit no event announced: the table was refreshed), loaded (the catalog has no cheap location call: the table was loaded), error.",
		}, []string{"outcome"}),
		DeleteFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_table_delete_files",
			Help: "Live delete files by kind (position, equality, deletion_vector), as tracked by the planner.",
		}, []string{"table", "kind"}),
		DeleteFileRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_table_delete_file_ratio",
			Help: "Live delete files per live data file (0 without data files).",
		}, []string{"table"}),
		SparkLocalRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_spark_local_runs_total",
			Help: "Jobs the spark rules sent to Spark that ran in reactor instead, by reason (not_expressible: sparkcall cannot render them faithfully; spark_failed: Spark could not run them and on_failure is local).",
		}, []string{"reason"}),
		SparkInterrupts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_spark_interrupts_total",
			Help: "Spark jobs reactor interrupted through Spark Connect, by why (timeout, shutdown).",
		}, []string{"why"}),
		SparkUnconfirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reactor_spark_unconfirmed_total",
			Help: "Spark jobs whose end reactor could not confirm within interrupt_grace (Spark unreachable); their tables were released anyway.",
		}),
		JobQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_job_queue_depth",
			Help: "Jobs waiting for a slot of this process, by class (urgent: compaction, delete rewrites, metadata over its bounds; background: the rest).",
		}, []string{"class"}),
		JobsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reactor_jobs_running",
			Help: "Jobs running in this process (local slots).",
		}),
		JobQueueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reactor_job_queue_wait_seconds",
			Help:    "How long jobs waited for a slot, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"kind"}),
		Refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_refreshes_total",
			Help: "Table refreshes (catalog loads) the event path made, by result (applied, error).",
		}, []string{"result"}),
		EventsCoalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reactor_events_coalesced_total",
			Help: "Events acknowledged without a catalog load of their own: already applied, or covered by one refresh of their table shared with other events.",
		}),
		LeaseShards: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reactor_lease_shards",
			Help: "Shards the tables are divided into among replicas (each a lease).",
		}),
		LeaseShardsHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reactor_lease_shards_held",
			Help: "Shards whose table lease this replica holds.",
		}),
		LeaseMembers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reactor_lease_members",
			Help: "Live replicas, as this replica sees the lease bucket.",
		}),
		LeaseHandovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_lease_handovers_total",
			Help: "Shard leases this replica acquired, released (to rebalance or on shutdown) and lost (taken over or not renewed in time).",
		}, []string{"event"}),
		EventsForwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_events_forwarded_total",
			Help: "Events sent on to the replica that owns their table (through the shard stream), by source.",
		}, []string{"source"}),
		FastLanes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reactor_fast_lanes",
			Help: "Hot tables (a partition near a threshold) whose commit events this replica also watches as they are published, ahead of the stream's backlog.",
		}),
		FastLaneLooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_fast_lane_looks_total",
			Help: "Commit events a fast lane saw before the durable consumer delivered them, by outcome (urgent: a refresh asked for at the head of the line; covered: the state held them already).",
		}, []string{"outcome"}),
		CatalogReachable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reactor_catalog_reachable",
			Help: "1 while the catalog answers (the readiness probe's last namespace listing, every 15 s, succeeded), 0 while it does not (down at start or later, hung, refusing credentials): reactor waits for it and is not ready meanwhile.",
		}),
		snapshots:    newSnapshotGauges(),
		refresh:      newRefreshGauges(),
		catalogCalls: newCatalogCalls(),
		leaseOwners:  newLeaseOwners(),
		Surfaces:     newSurfaces(),
	}
	m.Registry.MustRegister(m.Events, m.JobsScheduled, m.Jobs, m.JobDuration, m.CommitConflicts,
		m.CommitRetries, m.StateRebuilds, m.FilesRewritten, m.FilesAdded, m.ConfigReloads, m.Objects, m.UnconfirmedFiles,
		m.DataFiles, m.SmallFiles, m.IdealDataFiles, m.OrphanCandidates, m.OrphansRefused, m.DeletionsRefused, m.RecordsRefused, m.Polls, m.DeleteFiles, m.DeleteFileRatio, m.SparkLocalRuns,
		m.SparkInterrupts, m.SparkUnconfirmed, m.snapshots,
		// Created with the rest but long left unregistered, so they were
		// never exported: the dashboard and alerts read them.
		m.JobQueue, m.JobsRunning, m.JobQueueWait, m.Refreshes, m.EventsCoalesced, m.LeaseShards,
		m.LeaseShardsHeld, m.LeaseMembers, m.LeaseHandovers, m.EventsForwarded, m.refresh, m.catalogCalls, m.leaseOwners,
		m.FastLanes, m.FastLaneLooks, m.CatalogReachable)
	m.Registry.MustRegister(m.Surfaces.collectors()...)
	m.startAtZero()
	m.Surfaces.startAtZero()
	return m
}

// ForgetTable drops a table's per-table series (its lease moved to another
// replica, which exports them now).
func (m *Metrics) ForgetTable(table string) {
	for _, v := range []*prometheus.GaugeVec{m.UnconfirmedFiles, m.DataFiles, m.SmallFiles, m.IdealDataFiles, m.OrphanCandidates, m.DeleteFileRatio} {
		v.DeleteLabelValues(table)
	}
	m.DeleteFiles.DeletePartialMatch(prometheus.Labels{"table": table})
	m.snapshots.mu.Lock()
	delete(m.snapshots.tables, table)
	m.snapshots.mu.Unlock()
}
