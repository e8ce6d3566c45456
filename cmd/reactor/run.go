package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
	"github.com/icereactor/reactor/worker"
)

// runConfig is `reactor run`'s command line, validated and resolved.
type runConfig struct {
	natsURL        string
	natsAuth       worker.NATSSecurity
	dataDir        string
	catalog        catalogs.Config // nil Props: the embedded SQLite catalog
	thresholdsFile string
	thresholds     *thresholds.Config
	commits        triggers.CommitOptions
	notifications  triggers.NotificationOptions
	noNotification bool
	watchPrefixes  []string
	httpAddr       string
	statusAddr     string
	statusToken    string
	shutdownGrace  time.Duration
	concurrency    int
	logLevel       slog.Level
	leases         worker.LeaseConfig
	// records: the record key and the deletion scope (record_flags.go);
	// the key is resolved when the worker starts (it may be generated).
	records       *recordFlags
	deletionScope []string
}

const runDescription = `Runs the reactor worker until SIGINT or SIGTERM: it consumes commit events and
bucket notifications from NATS JetStream and compacts the partitions of the
tables they concern that have too many small files.

With no --nats-url it starts an embedded NATS server, and with no catalog
settings it opens an embedded SQLite catalog, both under --data-dir.
Every flag can also be set through the environment variable shown; a flag on
the command line wins over the environment, which wins over the default.
REACTOR_CATALOG_PROP takes a comma-separated list of key=value pairs.`

// parseRunConfig parses and validates `reactor run`'s arguments, reading the
// environment through getenv. Every error is a *usageError (or flag.ErrHelp
// after help was printed to stdout).
func parseRunConfig(args []string, getenv func(string) string, stdout io.Writer) (runConfig, error) {
	fs := newFlagSet("run", "run [flags]", runDescription)
	natsURL := fs.String("nats-url", "", "NATS server `URL`; empty starts an embedded server under --data-dir")
	natsAuth := addNATSFlags(fs)
	cat := addCatalogFlags(fs, "`directory` for the embedded NATS store and the embedded catalog")
	records := addRecordFlags(fs)
	thresholdsFile := fs.String("thresholds", "", "thresholds YAML `file`; empty uses the built-in defaults")
	commitSubject := fs.String("commit-subject", triggers.DefaultCommitSubject, "NATS `subject` of commit events")
	deadLetter := fs.String("dead-letter-subject", triggers.DefaultDeadLetterSubject, "NATS `subject` for events that cannot be applied")
	notifySubject := fs.String("notification-subject", triggers.DefaultNotificationSubject,
		"NATS `subject` of bucket notifications (MinIO's NATS target); empty disables them")
	notifyEncoding := fs.String("notification-key-encoding", string(events.KeyEncodingURL),
		"how that source encodes object keys: url (MinIO, AWS) or raw (versitygw)")
	var extraSources propsFlag
	fs.Var(&extraSources, "notification-source", "another notification source `subject=encoding` (url or raw), repeatable")
	var watchPrefixes stringList
	fs.Var(&watchPrefixes, "watch-prefix", "an object-store `location` (s3://bucket/prefix) where new tables may appear, besides the catalog's warehouse; repeatable")
	newTableGrace := fs.Duration("new-table-grace", triggers.DefaultNewTableGrace,
		"how long a notification under a watched prefix waits for the catalog to list its table before it is dropped")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGTERM, how long running jobs may take to finish before they are abandoned")
	httpAddr := fs.String("http-addr", ":9090", "`address` for /metrics, /healthz and /readyz; empty disables them")
	status := addStatusFlags(fs)
	streams := addStreamFlags(fs)
	concurrency := fs.Int("concurrency", 0, "run at most `n` jobs at once, across tables (0: the thresholds file's concurrency, else 2)")
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	replica := fs.String("replica", "", "`name` of this replica in the table lease bucket (empty: the host name, a pod's name on Kubernetes); stable across restarts, unique among live processes: a restart under the same name resumes its tables at once, a second live process under it takes none")
	leaseTTL := fs.Duration("lease-ttl", lease.DefaultTTL, "how long a table lease outlives its owner's last renewal: a killed replica's tables move within about this long")
	leaseShards := fs.Int("lease-shards", lease.DefaultShards, "`n` shards the tables hash to for the leases; every replica of a fleet must use the same number")
	streamReplicas := fs.Int("stream-replicas", 1,
		"copies a NATS cluster keeps of reactor's streams (commits, notifications, dead letters, shards): 3 on a three-node cluster; a single server takes only 1")
	leaseKVReplicas := fs.Int("lease-bucket-replicas", 1, "stream replicas of the lease bucket on a clustered NATS (1 or 3; default: --stream-replicas)")
	annotateEnv(fs)

	if err := parseFlags(fs, args, stdout); err != nil {
		return runConfig{}, err
	}
	if err := applyEnv(fs, getenv); err != nil {
		return runConfig{}, &usageError{err: err}
	}

	cfg := runConfig{
		natsURL:        strings.TrimSpace(*natsURL),
		dataDir:        *cat.dataDir,
		thresholdsFile: *thresholdsFile,
		commits: triggers.CommitOptions{
			Subject:           *commitSubject,
			DeadLetterSubject: *deadLetter,
		},
		concurrency:   *concurrency,
		httpAddr:      strings.TrimSpace(*httpAddr),
		shutdownGrace: *grace,
	}
	if *streamReplicas < 1 || *streamReplicas > 5 {
		return runConfig{}, usageErrorf("--stream-replicas must be between 1 and 5, got %d", *streamReplicas)
	}
	var err error
	cfg.commits.StreamReplicas = *streamReplicas
	cfg.notifications.StreamReplicas = *streamReplicas
	bucketReplicas := *streamReplicas
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "lease-bucket-replicas" {
			bucketReplicas = *leaseKVReplicas
		}
	})
	if cfg.statusAddr, cfg.statusToken, err = status.resolve(cfg.httpAddr); err != nil {
		return runConfig{}, err
	}
	if err := streams.resolve(&cfg.commits, &cfg.notifications); err != nil {
		return runConfig{}, err
	}
	cfg.leases = worker.LeaseConfig{Replica: strings.TrimSpace(*replica), TTL: *leaseTTL, Shards: *leaseShards, KVReplicas: bucketReplicas}
	if cfg.logLevel, err = parseLogLevel(*logLevel); err != nil {
		return runConfig{}, err
	}
	if cfg.concurrency < 0 {
		return runConfig{}, usageErrorf("--concurrency must not be negative, got %d", cfg.concurrency)
	}
	if r := cfg.leases.Replica; strings.IndexFunc(r, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	}) >= 0 {
		return runConfig{}, usageErrorf("--replica %q: use letters, digits, '-' and '_' only", r)
	}
	if *leaseTTL < 3*time.Second {
		return runConfig{}, usageErrorf("--lease-ttl must be at least 3s (renewals go every fifth of it), got %s", *leaseTTL)
	}
	if *leaseShards < 1 || *leaseShards > 4096 {
		return runConfig{}, usageErrorf("--lease-shards must be between 1 and 4096, got %d", *leaseShards)
	}
	if *leaseKVReplicas < 1 || *leaseKVReplicas > 5 {
		return runConfig{}, usageErrorf("--lease-bucket-replicas must be between 1 and 5, got %d", *leaseKVReplicas)
	}
	if cfg.commits.Subject == "" || cfg.commits.DeadLetterSubject == "" {
		return runConfig{}, usageErrorf("--commit-subject and --dead-letter-subject must not be empty")
	}
	if subject := strings.TrimSpace(*notifySubject); subject != "" {
		enc, err := events.ParseKeyEncoding(*notifyEncoding)
		if err != nil {
			return runConfig{}, usageErrorf("--notification-key-encoding: %w", err)
		}
		cfg.notifications.Sources = append(cfg.notifications.Sources, triggers.NotificationSource{Subject: subject, KeyEncoding: enc})
	}
	for _, subject := range extraSources.keys {
		enc, err := events.ParseKeyEncoding(extraSources.values[subject])
		if err != nil {
			return runConfig{}, usageErrorf("--notification-source %s: %w", subject, err)
		}
		cfg.notifications.Sources = append(cfg.notifications.Sources, triggers.NotificationSource{Subject: subject, KeyEncoding: enc})
	}
	cfg.noNotification = len(cfg.notifications.Sources) == 0
	if *newTableGrace <= 0 {
		return runConfig{}, usageErrorf("--new-table-grace must be positive, got %s", *newTableGrace)
	}
	cfg.notifications.NewTableGrace = *newTableGrace
	for _, p := range watchPrefixes {
		if u, err := url.Parse(p); err != nil || u.Host == "" || strings.EqualFold(u.Scheme, "file") {
			return runConfig{}, usageErrorf("--watch-prefix %q: want an object-store location such as s3://bucket/warehouse", p)
		}
	}
	cfg.watchPrefixes = watchPrefixes
	cfg.notifications.DeadLetterSubject = *deadLetter
	if cfg.natsURL != "" {
		if err := checkNATSURL(cfg.natsURL); err != nil {
			return runConfig{}, err
		}
	}
	if cfg.natsAuth, err = natsAuth.resolve(cfg.natsURL); err != nil {
		return runConfig{}, err
	}
	if cfg.catalog, err = cat.config(false); err != nil {
		return runConfig{}, err
	}
	cfg.records = records
	if cfg.deletionScope, err = records.deletionScope(); err != nil {
		return runConfig{}, err
	}
	if cfg.dataDir == "" && (cfg.natsURL == "" || cfg.catalog.Props == nil) {
		return runConfig{}, usageErrorf("--data-dir is required for the embedded NATS server or catalog")
	}

	// The thresholds are loaded here, not when the worker starts, so that a
	// bad file is a configuration error (exit 2) with the field path.
	cfg.thresholds = thresholds.Default()
	if cfg.thresholdsFile != "" {
		if cfg.thresholds, err = thresholds.Load(cfg.thresholdsFile); err != nil {
			return runConfig{}, &inputError{err: err}
		}
	}
	if cfg.concurrency == 0 {
		cfg.concurrency = thresholds.DefaultConcurrency
		if n := cfg.thresholds.Concurrency; n != nil {
			cfg.concurrency = *n
		}
	}
	return cfg, nil
}

func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, usageErrorf("--log-level must be debug, info, warn or error, got %q", s)
}

// runCmd is `reactor run`.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseRunConfig(args, os.Getenv, stdout)
	if err != nil {
		return err
	}
	log := newJSONLogger(stderr, cfg.logLevel)
	log.Info("reactor starting", cfg.logAttrs()...)
	keys, keySource, err := cfg.records.keys(cfg.dataDir, true, os.Getenv)
	if err != nil {
		log.Error("reactor could not start", "error", err)
		return err
	}
	if strings.HasSuffix(keySource, "(generated)") && cfg.natsURL != "" {
		log.Warn("no record key was given, so reactor generated one in its data directory: replicas must share one key (--record-key-file from a Secret), or each refuses the records the others write (docs/operations.md#record-key)",
			"key_file", keySource)
	}
	log.Info("records are signed", "key_id", keys.SigningKeyID(), "key_source", keySource, "deletion_scope", cfg.deletionScope)

	w, err := worker.Start(ctx, worker.Config{
		NATSURL:    cfg.natsURL,
		NATSAuth:   cfg.natsAuth,
		DataDir:    cfg.dataDir,
		Catalog:    cfg.catalog,
		Thresholds: cfg.thresholds,

		ThresholdsFile: cfg.thresholdsFile,
		Commits:        cfg.commits,
		Concurrency:    cfg.concurrency,
		Logger:         log,

		Notifications:        cfg.notifications,
		DisableNotifications: cfg.noNotification,
		WarehousePrefixes:    cfg.watchPrefixes,
		HTTPAddr:             cfg.httpAddr,
		StatusAddr:           cfg.statusAddr,
		StatusTokenFile:      cfg.statusToken,
		Leases:               cfg.leases,
		RecordKeys:           keys,
		DeletionScope:        cfg.deletionScope,
	})
	if err != nil {
		log.Error("reactor could not start", "error", err)
		return catalogUsage(fmt.Errorf("start: %w", err))
	}
	if w.Connected() {
		log.Info("reactor running; send SIGINT or SIGTERM to stop")
	} else {
		log.Info("reactor running, waiting for NATS (/readyz says not ready until it connects); send SIGINT or SIGTERM to stop")
	}
	<-ctx.Done()
	log.Info("reactor shutting down: no new events or jobs; waiting for running jobs", "grace", cfg.shutdownGrace)
	if !w.Shutdown(cfg.shutdownGrace) {
		log.Warn("jobs still running after the grace period were abandoned; their uncommitted files were deleted")
	}
	st := w.Pool.Stats()
	log.Info("reactor stopped", "jobs", st.Jobs, "succeeded", st.Succeeded, "noop", st.Noop,
		"gave_up", st.GaveUp, "failed", st.Failed, "conflicts", st.Conflicts,
		"files_rewritten", st.FilesRewritten, "files_added", st.FilesAdded)
	return nil
}

// logAttrs describes the configuration for the start-up log line, with
// credentials removed from URLs and secret catalog properties masked.
func (c runConfig) logAttrs() []any {
	natsURL := "embedded"
	if c.natsURL != "" {
		natsURL = redact.String(c.natsURL)
	}
	catalog := any("embedded")
	if c.catalog.Props != nil {
		shown := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(c.catalog.Props)) {
			shown[k] = redact.Value(k, c.catalog.Props[k])
		}
		catalog = shown
	}
	th := c.thresholdsFile
	if th == "" {
		th = "built-in defaults"
	}
	return []any{
		"version", buildVersion().short(), "nats_url", natsURL, "nats_tls", c.natsAuth.TLS(), "data_dir", c.dataDir,
		"catalog_name", c.catalog.Name, "catalog", catalog, "catalog_timeout", c.catalog.Timeout.String(), "thresholds", th,
		"commit_subject", c.commits.Subject, "dead_letter_subject", c.commits.DeadLetterSubject,
		"concurrency", c.concurrency, "log_level", c.logLevel.String(),
	}
}

// checkNATSURL refuses a --nats-url that does not parse. url.Parse's error
// quotes the whole URL, password included: the message names the problem
// and shows the URL redacted.
func checkNATSURL(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		if _, err := url.Parse(strings.TrimSpace(part)); err != nil {
			reason := err
			var uerr *url.Error
			if errors.As(err, &uerr) {
				reason = uerr.Err
			}
			return usageErrorf("--nats-url %s is not a valid URL: %v", redact.String(s), reason)
		}
	}
	return nil
}
