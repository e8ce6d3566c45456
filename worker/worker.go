package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/commitwatch"
	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/executor/pool"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/sparkrun"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// Config is everything a worker needs.
type Config struct {
	// NATSURL of the NATS server; empty starts an embedded one with its
	// JetStream store under DataDir.
	NATSURL string
	// NATSCreds is a credentials file for NATSURL's server (optional; the
	// same as NATSAuth.CredsFile).
	NATSCreds string
	// NATSAuth: an nkey seed, TLS with a CA and a client certificate.
	NATSAuth NATSSecurity
	// DataDir holds the embedded NATS store, and the embedded catalog when
	// no catalog is configured.
	DataDir string
	// Catalog selects the catalog (package catalogs): nil Props open the
	// embedded SQLite catalog under DataDir/catalog. A catalog that is
	// down is waited for; its Logger is the worker's.
	Catalog    catalogs.Config
	Thresholds *thresholds.Config
	// ThresholdsFile, when set, is watched and reloaded on change (a
	// mounted ConfigMap); Thresholds must hold its current content.
	ThresholdsFile   string
	ThresholdsReload time.Duration // how often it is checked (default 5s)
	Commits          triggers.CommitOptions
	// Notifications configures bucket-notification sources; the default
	// is one source, subject minio.events with URL-encoded keys.
	Notifications        triggers.NotificationOptions
	DisableNotifications bool
	// HTTPAddr, when set, serves /metrics, /healthz and /readyz there
	// ("127.0.0.1:0" picks a free port; see Worker.HTTPAddr).
	HTTPAddr string
	// StatusAddr is where the status pages (package status) are served:
	// "" beside /metrics on HTTPAddr, an address of their own (reactor
	// run's default, 127.0.0.1:9095), or StatusOff.
	StatusAddr string
	// StatusTokenFile, when set, holds the token every status page
	// request must carry (a Bearer token, or basic auth's password).
	StatusTokenFile string
	// HTTPLimits are the HTTP listeners' timeouts and connection bound
	// (zero: the defaults).
	HTTPLimits HTTPLimits
	// ReadinessEvery is how often the catalog is asked, in the
	// background, whether it answers, for /readyz and reactor_ready
	// (default DefaultReadinessEvery).
	ReadinessEvery time.Duration
	// StreamWatchEvery is how often reactor's NATS streams are read for
	// their sizes against their limits (triggers.DefaultStreamWatchEvery).
	StreamWatchEvery time.Duration
	// HealthSubjectPrefix: after every job, the table's health report is
	// published on PREFIX.<namespace>.<table> (default reactor.health).
	HealthSubjectPrefix string
	// JobSubjectPrefix: job lifecycle events go to
	// PREFIX.<phase>.<namespace>.<table> (default reactor.jobs).
	JobSubjectPrefix string
	// LocationRefresh is how often the table-location index is rebuilt
	// from the catalog besides on demand (default 5m).
	LocationRefresh time.Duration
	// WarehousePrefixes are object-store locations (s3://bucket/prefix)
	// where new tables may appear; the catalog's warehouse property, when
	// it is such a location, is added. Bucket notifications for objects
	// there that no known table claims are held until the catalog lists
	// their table (see triggers.NotificationOptions.NewTableGrace).
	WarehousePrefixes []string
	// Concurrency bounds jobs running at once (across tables).
	Concurrency int
	// RecordKeys sign and verify the records reactor keeps in tables'
	// storage; every replica needs the same keys (nil: a key of this
	// process alone, so a restart or another replica refuses what it
	// wrote: see cmd/reactor's record key resolution).
	RecordKeys *deletions.Keyring
	// DeletionScope bounds where any table's files may be deleted:
	// locations (prefixes) outside which no table root qualifies
	// (empty: no bound beyond each table's own roots).
	DeletionScope []string
	// RefreshConcurrency bounds table refreshes (catalog loads) of the
	// event path running at once (triggers.DefaultRefreshConcurrency).
	RefreshConcurrency int
	// Leases: how replicas share the tables (every worker takes part; a
	// lone one owns them all).
	Leases  LeaseConfig
	Logger  *slog.Logger
	Metrics *metrics.Metrics

	// parseThresholds replaces thresholds.Parse on reload (tests).
	parseThresholds func([]byte) (*thresholds.Config, error)
	// executorCatalog, when set, wraps the catalog the executor commits
	// through (tests).
	executorCatalog func(catalog.Catalog) catalog.Catalog
	// sparkDial replaces sparkrun.Dial (tests).
	sparkDial sparkrun.Dialer
	// wrapCatalog, when set, wraps the catalog once opened: every part
	// of the worker uses what it returns (tests count calls with it).
	wrapCatalog func(catalog.Catalog) catalog.Catalog
}

// Worker is a running reactor.
type Worker struct {
	NATS    *embedded.NATS // nil when NATSURL was given
	Catalog catalog.Catalog
	// Planner and Pool are the job loop's (loop.go), set by Start before
	// it returns and never after.
	Planner *planner.Planner
	// catalog is Catalog as package catalogs opened it (Close closes it).
	catalog   *catalogs.Catalog
	Pool      *pool.Pool
	Metrics   *metrics.Metrics
	consumer  *triggers.CommitConsumer
	objects   *triggers.NotificationConsumer
	refreshes *triggers.Coalescer
	leases    *lease.Manager
	// ownership is the one ownership.Tables every layer is handed
	// (replicas.go).
	ownership leaseOwnership
	// commits is the one commit-observed signal, shared by the triggers
	// and the executor.
	commits   *commitwatch.Watch
	shardCons *triggers.ShardConsumers
	// reports is the connection job events and reports go out on. It is
	// set as soon as NATS answers, before the consumers start: an event
	// they deliver can start a job at once, and its events must not be
	// dropped because the rest of the start-up had not finished.
	reports *nats.Conn
	// discoverAgain asks for another discovery pass (shards acquired).
	discoverAgain chan struct{}
	// killed: Close stops renewing leases without releasing them (tests:
	// a replica that died).
	killed    bool
	bg        sync.WaitGroup
	cancel    context.CancelFunc
	log       *slog.Logger
	closeOnce sync.Once
	// servers are the HTTP listeners (metrics and probes, status pages).
	servers    []*http.Server
	httpAddr   string
	statusAddr string
	// readiness is what /readyz answers besides NATS and the leases,
	// kept fresh in the background (readiness.go).
	readiness *readiness
	jobPrefix string
	// concurrency is the pool's size (for the reload warning).
	concurrency int
	// poller is the polling safety net (poll.go), once NATS is connected.
	poller *poller
	// keys sign and verify reactor's records; known is the registry of
	// the catalog's tables the deletion rule asks, filled by the planner's
	// location index refreshes.
	keys  *deletions.Keyring
	known *scope.Known
	// spark is the Spark backend (idle without spark rules), and
	// sparkConcurrency its bound, fixed at start.
	spark            *sparkrun.Runner
	sparkConcurrency int
	// parseThresholds is Config.parseThresholds.
	parseThresholds func([]byte) (*thresholds.Config, error)
	// status is what the status pages read besides the parts' state
	// (status.go).
	status statusState

	// mu guards conn, js, consumer, objects and reports, which a worker started
	// before NATS was reachable sets once it connects, and closing.
	mu      sync.Mutex
	conn    *nats.Conn
	js      jetstream.JetStream
	closing bool
	// connected is closed once NATS is connected and the consumers run.
	connected chan struct{}
}

// Start brings a worker up. On error everything it started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Worker, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Thresholds == nil {
		cfg.Thresholds = thresholds.Default()
	}
	if cfg.DataDir == "" && (cfg.NATSURL == "" || cfg.Catalog.Props == nil) {
		return nil, errors.New("worker: a data directory is required for the embedded NATS server or catalog")
	}
	w := &Worker{Metrics: cfg.Metrics, log: cfg.Logger, connected: make(chan struct{}), discoverAgain: make(chan struct{}, 1),
		keys: cfg.RecordKeys}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	if w.keys == nil {
		w.keys = deletions.EphemeralKeyring()
	}
	if w.known, err = scope.NewKnown(cfg.DeletionScope...); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}

	url := cfg.NATSURL
	if url == "" {
		store := filepath.Join(cfg.DataDir, "nats")
		if err := os.MkdirAll(store, 0o755); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		w.NATS, err = embedded.StartNATS(embedded.NATSOptions{StoreDir: store})
		if err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		url = w.NATS.URL()
		cfg.Logger.Info("started embedded NATS server", "url", url, "store", store)
	}

	catCfg := cfg.Catalog
	if catCfg.Props == nil && catCfg.EmbeddedDir == "" {
		catCfg.EmbeddedDir = filepath.Join(cfg.DataDir, "catalog")
	}
	catCfg.Logger = cfg.Logger
	// A catalog that is down is waited for, as NATS is: only a
	// configuration error stops the start. Until it opens, its calls fail
	// with the reason, which the readiness probe reports.
	w.catalog, err = catalogs.OpenWaiting(ctx, catCfg)
	if err != nil {
		return nil, fmt.Errorf("worker: open catalog: %w", err)
	}
	w.Catalog = w.catalog
	w.Metrics.SetCatalogCallSource(w.catalog.CallCounts)
	if cfg.wrapCatalog != nil {
		w.Catalog = cfg.wrapCatalog(w.Catalog)
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	every := cfg.ReadinessEvery
	if every <= 0 {
		every = DefaultReadinessEvery
	}
	w.readiness = newReadiness(every, ReadyCatalog)
	w.bg.Add(1)
	go w.probeCatalog(runCtx, every)
	execCat := w.Catalog
	if cfg.executorCatalog != nil {
		execCat = cfg.executorCatalog(execCat)
	}
	w.concurrency = max(cfg.Concurrency, 1)
	// One answer to "does this replica own the table" for every layer
	// (nothing is owned before NATS is connected and the leases known).
	own := newLeaseOwnership(w, cfg.Leases)
	w.ownership = own
	// One signal "a writer just committed": the triggers observe, the
	// executor's commit retries wait on it.
	w.commits = &commitwatch.Watch{}
	exec, err := executor.New(executor.Options{Catalog: execCat, Logger: cfg.Logger, Metrics: cfg.Metrics,
		// Every commit, every attempt, asks for the table's lease first.
		Ownership: own,
		// A job that lost a commit race retries right after a writer's
		// next commit, which the triggers observe.
		CommitWatch: w.commits,
		// The same bound holds the output files written at once, across
		// jobs: each holds a buffered row group (docs/operations.md#memory-and-pod-sizing).
		Concurrency: w.concurrency,
		SortMemory:  int64(cfg.Thresholds.SortMemoryOrDefault()), SpillDir: cfg.Thresholds.SpillDirOrDefault(),
		Records: w.keys, Tables: w.known})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("worker: %w", err)
	}
	catName := cfg.Catalog.Name
	if cfg.Catalog.Props == nil {
		catName = embedded.CatalogName
	}
	w.status.init(cfg.Thresholds, catName)
	w.spark = sparkrun.New(sparkrun.Options{Catalog: w.Catalog, CatalogName: catName, Config: cfg.Thresholds,
		Logger: cfg.Logger, Metrics: cfg.Metrics, Dial: cfg.sparkDial, Records: w.keys})
	w.sparkConcurrency = cfg.Thresholds.SparkSettings().Concurrency
	if set := cfg.Thresholds.SparkSettings(); set.Enabled {
		cfg.Logger.Info("spark backend on: jobs the spark rules select run on Spark through Spark Connect",
			"endpoint", redact.String(set.Endpoint), "rules", len(set.Rules), "concurrency", set.Concurrency,
			"timeout", set.Timeout, "on_failure", set.OnFailure)
	}
	healthPrefix := cfg.HealthSubjectPrefix
	if healthPrefix == "" {
		healthPrefix = DefaultHealthSubjectPrefix
	}
	w.jobPrefix = cfg.JobSubjectPrefix
	if w.jobPrefix == "" {
		w.jobPrefix = events.DefaultJobSubjectPrefix
	}
	// The job loop first, then the pool and the planner around it: the
	// planner's jobs go to its dispatch, the pool's ends to its finish.
	loop := newJobLoop(runCtx, loopOptions{
		Planner: planner.Options{
			Catalog:           w.Catalog,
			CatalogName:       catName,
			Config:            cfg.Thresholds,
			Logger:            cfg.Logger,
			Metrics:           cfg.Metrics,
			WarehousePrefixes: warehousePrefixes(cfg),
			Records:           w.keys,
			Tables:            w.known,
		},
		Runner: exec, Concurrency: w.concurrency,
		Offloader: w.spark, OffloadConcurrency: w.sparkConcurrency,
		Ownership: own, Out: w, Metrics: cfg.Metrics, Logger: cfg.Logger, HealthPrefix: healthPrefix,
	})
	w.Planner, w.Pool = loop.planner, loop.pool
	if err := w.serveHTTP(cfg); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if cfg.ThresholdsFile != "" {
		initial, err := thresholds.ReadFile(cfg.ThresholdsFile)
		if err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		w.parseThresholds = cfg.parseThresholds
		every := cfg.ThresholdsReload
		if every <= 0 {
			every = 5 * time.Second
		}
		w.bg.Add(1)
		go w.watchThresholds(runCtx, cfg.ThresholdsFile, every, initial)
	}
	if cfg.Notifications.DeadLetterSubject == "" {
		cfg.Notifications.DeadLetterSubject = cfg.Commits.DeadLetterSubject
	}
	// Discovery waits for NATS: the jobs it schedules publish their
	// events there, and an event lost at start-up is a job nobody saw.
	w.bg.Add(1)
	go w.discover(runCtx)
	connect := func(ctx context.Context) error { return w.connectNATS(ctx, runCtx, cfg, url) }
	if err := connect(ctx); err != nil {
		if cfg.NATSURL == "" || !natsRetryable(err) {
			return nil, fmt.Errorf("worker: %w", err)
		}
		// A NATS server that is down or restarting is a transient fault,
		// as the catalog's is: wait for it, and say not-ready meanwhile.
		cfg.Logger.Warn("NATS is not reachable; waiting for it (not ready until connected)",
			"url", redact.String(url), "error", err)
		w.bg.Add(1)
		go w.awaitNATS(runCtx, connect, redact.String(url))
	}
	return w, nil
}

// Close stops taking events, abandons running jobs cleanly (their
// uncommitted outputs are deleted), and stops everything it started.
func (w *Worker) Close() {
	w.closeOnce.Do(w.close)
}

// Shutdown stops taking events and scheduling jobs, gives running jobs up
// to grace to finish (commit or give up on their own), then abandons the
// rest cleanly (their uncommitted outputs are deleted) and closes. It
// reports whether every job finished within the grace period.
func (w *Worker) Shutdown(grace time.Duration) bool {
	if _, commits, objects := w.link(); commits != nil {
		commits.Stop()
		if objects != nil {
			objects.Stop()
		}
	}
	if w.Planner != nil {
		w.Planner.Close()
	}
	if w.spark != nil {
		// A Spark job rarely ends within the grace period; interrupt it now
		// so that Spark confirms its end before this process is killed
		// and a successor starts another job on the table.
		w.spark.Stop()
	}
	done := make(chan struct{})
	go func() {
		if w.Pool != nil {
			w.Pool.Wait()
		}
		close(done)
	}()
	finished := true
	select {
	case <-done:
	case <-time.After(grace):
		finished = false
		w.log.Warn("shutdown grace period over; abandoning running jobs", "grace", grace)
	}
	w.Close()
	return finished
}

func (w *Worker) close() {
	for _, srv := range w.servers {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if srv.Shutdown(shutdownCtx) != nil {
			// A response still being written to a client that reads
			// nothing: its write deadline would end it; end it now.
			_ = srv.Close()
		}
		cancel()
	}
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	conn, _, _ := w.link()
	w.stopConsuming()
	if w.Planner != nil {
		w.Planner.Close()
	}
	if w.cancel != nil {
		w.cancel()
	}
	if w.Pool != nil {
		w.Pool.Wait()
	}
	w.bg.Wait()
	if m := w.leaseManager(); m != nil {
		if w.killed {
			m.Stop() // the leases expire after their TTL
		} else {
			// Every job has ended: survivors may take the tables now.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			m.Release(ctx)
			cancel()
		}
	}
	if w.catalog != nil {
		_ = w.catalog.Close()
	}
	if conn != nil {
		conn.Close()
	}
	if w.NATS != nil {
		w.NATS.Shutdown()
	}
}
