package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/probe"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/worker"
)

// The demo's table and policy. The target file size is a table property
// (not a threshold) so the demo also shows reactor honouring it; it is small
// so that a commit of a few dozen rows is a "small file" and compaction has
// something to merge within seconds. The margins are seconds instead of
// days so that expiry and the deferred deletion happen while you watch; the
// summary says so.
const (
	demoNamespace      = "demo"
	demoTableName      = "events"
	demoTargetFileSize = 256 * thresholds.KiB
	demoSmallFileCount = 8
	demoMinInputFiles  = 5
	demoQuietPeriod    = 300 * time.Millisecond
	// The hot partition is never quiet for 300 ms while the writer runs;
	// max_quiet_wait compacts it beside the writer anyway.
	demoMaxQuietWait = 3 * time.Second
	demoCooldown     = time.Second
	// A partition whose job gave up on conflicts is retried soon: the demo is
	// short, and the built-in 5 minutes would outlast it.
	demoConflictCooldown = 2 * time.Second
	demoCommitRetryTime  = 20 * time.Second
	// Every append adds a data manifest; 20 of them get merged.
	demoManifestCount = 20
	// Snapshots older than 4 s are expired (built-in: 5 days).
	demoSnapshotMaxAge = 4 * time.Second
	// The files an expiry unlinks are deleted 3 s after it, by a second
	// pass, so a reader that planned before the expiry can still read them
	// (built-in: 48 h); the demo's only readers are its own full scans,
	// which take well under a second.
	demoMinReaderMargin = 3 * time.Second
	// demoBacklog commits are written before reactor starts: the table a
	// streaming job left behind before anyone maintained it (the seeds'
	// worked example starts from 60 micro-batches, docs/design.md#origins).
	demoBacklog = 60
	// demoWriters commit concurrently, so one slow commit (a conflict being
	// retried) does not stall the rate.
	demoWriters = 4
	// demoSettleLimit bounds the wait for reactor after the writer stops.
	demoSettleLimit = 15 * time.Second
)

// errMismatch reports that the table does not hold what the writer wrote.
var errMismatch = errors.New("table contents differ from what the writer wrote")

type demoConfig struct {
	rate       float64
	duration   time.Duration
	partitions int
	rows       int
	keep       bool
	logLevel   slog.Level
	logFile    string
	showLog    bool // print the log file's path (it outlives the demo)
	httpAddr   string
	serve      bool
}

const demoDescription = `Runs everything embedded in a temporary directory: a NATS server, a SQLite
catalog, a partitioned table demo.events, and a simulated streaming writer.
The writer first leaves a backlog of small commits, as a pipeline that ran
before anyone maintained its table would; then reactor starts and the writer
goes on committing small batches (half of them to the hot partition p0),
publishing a commit event for each. reactor compacts the partitions, merges
manifests, expires snapshots and deletes the files they held once the reader
margin has passed.

One line per second shows the table as a reader sees it: live data files
against the ideal count, files on disk, snapshots, data manifests, a full
scan's time against the same rows compacted, bytes rewritten, snapshots
expired, files unlinked and deleted, and the table's health. The summary compares the
table before reactor and after, and checks that the table holds exactly the
rows written (exit status 1 if not). reactor's own log goes to a file
(--log-file), not between the lines.

reactor's status pages (every table, its partitions, jobs, and what is due
and why) are served on --http-addr while the demo runs; the demo prints
their URL. With --serve it keeps reactor running and serving them after
the summary, until Ctrl-C.`

func parseDemoConfig(args []string, stdout io.Writer) (demoConfig, error) {
	fs := newFlagSet("demo", "demo [flags]", demoDescription)
	rate := fs.Float64("rate", 8, "writer `commits` per second once reactor runs")
	duration := fs.Duration("duration", 15*time.Second, "how long the writer writes once reactor runs")
	partitions := fs.Int("partitions", 4, "number of partitions written (p0 is hot)")
	rows := fs.Int("rows", 50, "rows per commit")
	keep := fs.Bool("keep", false, "keep the temporary directory (NATS store, catalog, table files, reactor's log)")
	logLevel := fs.String("log-level", "info", "reactor's log `level`: debug, info, warn or error")
	logFile := fs.String("log-file", "", "reactor's log (text) goes to this `file` (default reactor.log in the demo's directory); errors also to stderr")
	httpAddr := fs.String("http-addr", "127.0.0.1:0", "`address` of reactor's status pages and /metrics (port 0: a free one; the demo prints the URL)")
	serve := fs.Bool("serve", false, "after the summary, keep reactor running and its status pages served until Ctrl-C")
	if err := parseFlags(fs, args, stdout); err != nil {
		return demoConfig{}, err
	}
	cfg := demoConfig{rate: *rate, duration: *duration, partitions: *partitions, rows: *rows, keep: *keep, logFile: *logFile,
		showLog: *logFile != "", httpAddr: *httpAddr, serve: *serve}
	var err error
	if cfg.logLevel, err = parseLogLevel(*logLevel); err != nil {
		return demoConfig{}, err
	}
	switch {
	case !(cfg.rate > 0 && cfg.rate <= 1000):
		return demoConfig{}, usageErrorf("--rate must be between 0 and 1000 commits per second, got %v", cfg.rate)
	case cfg.duration <= 0:
		return demoConfig{}, usageErrorf("--duration must be positive, got %v", cfg.duration)
	case cfg.partitions < 1 || cfg.partitions > 100:
		return demoConfig{}, usageErrorf("--partitions must be between 1 and 100, got %d", cfg.partitions)
	case cfg.rows < 1 || cfg.rows > 1_000_000:
		return demoConfig{}, usageErrorf("--rows must be between 1 and 1000000, got %d", cfg.rows)
	case cfg.serve && cfg.httpAddr == "":
		return demoConfig{}, usageErrorf("--serve needs --http-addr")
	}
	return cfg, nil
}

// demoCmd is `reactor demo`.
func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseDemoConfig(args, stdout)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "reactor-demo-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	if !cfg.keep {
		defer func() {
			if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
				err = fmt.Errorf("remove %s: %w", dir, rerr)
			}
		}()
	}
	thresholdsPath, th, err := writeDemoThresholds(dir)
	if err != nil {
		return err
	}
	if cfg.logFile == "" {
		cfg.logFile = filepath.Join(dir, "reactor.log")
		// Without --keep the file goes with the directory: its path is
		// not worth printing.
		cfg.showLog = cfg.keep
	}
	logOut, err := os.OpenFile(cfg.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("reactor's log: %w", err)
	}
	defer logOut.Close()
	logCount := &levelCounter{}
	log := slog.New(slog.NewMultiHandler(
		logCount.wrap(redact.Handler(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: cfg.logLevel}))),
		redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	))

	// The writer's catalog handle opens the catalog first: the backlog is
	// written before reactor runs. reactor opens its own handle on the same
	// SQLite catalog, as a separate process would: their commits race for
	// real.
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		return fmt.Errorf("open writer catalog: %w", err)
	}
	defer func() {
		if c, ok := cat.(interface{ Close() error }); ok {
			_ = c.Close()
		}
	}()
	ident := table.Identifier{demoNamespace, demoTableName}
	props := iceberg.Properties{thresholds.TargetFileSizeProperty: strconv.FormatInt(demoTargetFileSize.Bytes(), 10)}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, props); err != nil {
		return fmt.Errorf("create demo table: %w", err)
	}
	copies, err := probe.NewCompacted(ctx, filepath.Join(dir, "compacted"))
	if err != nil {
		return err
	}
	defer copies.Close()
	// The demo's scans are small and frequent: three runs each, at most.
	copies.MaxRuns, copies.RunBudget = 3, 300*time.Millisecond

	d := &demo{cfg: cfg, out: stdout, th: th, cat: cat, ident: ident, copies: copies, logCount: logCount,
		dir: dir, thresholdsPath: thresholdsPath}
	d.names = make([]string, cfg.partitions)
	for i := range d.names {
		d.names[i] = fmt.Sprintf("p%d", i)
	}
	d.writer = streamwriter.New(cat, ident, d.publish)
	if cfg.keep {
		fmt.Fprintf(stdout, "demo files: %s (kept: --keep)\n", dir)
	}
	return d.run(ctx, func() error {
		met := metrics.New()
		keys, err := dataDirKeys(dir)
		if err != nil {
			return err
		}
		w, err := worker.Start(ctx, worker.Config{
			RecordKeys:  keys,
			DataDir:     dir,
			Thresholds:  th,
			Concurrency: 2,
			Logger:      log,
			Metrics:     met,
			HTTPAddr:    cfg.httpAddr,
		})
		if err != nil {
			return fmt.Errorf("start reactor: %w", err)
		}
		d.w = w
		d.jobs, err = probe.WatchJobs(w.Conn(), "")
		return err
	})
}

// demo is one run of `reactor demo`.
type demo struct {
	cfg      demoConfig
	out      io.Writer
	th       *thresholds.Config
	w        *worker.Worker // nil until reactor starts
	jobs     *probe.Jobs
	cat      catalog.Catalog // the writer's handle, also used to observe the table
	ident    table.Identifier
	copies   *probe.Compacted
	writer   *streamwriter.Writer
	names    []string // partition values, p0 first (the hot one)
	logCount *levelCounter
	start    time.Time
	// dir is the demo's directory, thresholdsPath its thresholds file.
	dir, thresholdsPath string

	mu       sync.Mutex             // guards out and publishing
	pub      streamwriter.Publisher // commit events go out once reactor runs
	lastScan probe.ScanSample
	scanned  bool
	lines    int
	atStop   observation // the table when the writer stopped (demo_quiet.go)
}

func (d *demo) tableName() string { return demoNamespace + "." + demoTableName }

// publish sends a commit's event once reactor runs; the backlog's commits
// predate reactor and go unannounced, as they would have.
func (d *demo) publish(ctx context.Context, ev events.CommitEvent) error {
	d.mu.Lock()
	pub := d.pub
	d.mu.Unlock()
	if pub == nil {
		return nil
	}
	return pub(ctx, ev)
}

func (d *demo) run(ctx context.Context, startReactor func() error) error {
	fmt.Fprintf(d.out, "reactor demo: table %s partitioned by category, %s=%s\n",
		d.tableName(), thresholds.TargetFileSizeProperty, demoTargetFileSize)
	fmt.Fprintf(d.out, "before:  the writer leaves %d commits of %d rows (no reactor yet)\n", demoBacklog, d.cfg.rows)
	fmt.Fprintf(d.out, "then:    reactor starts; the writer commits %g/s for %s, p0 hot (half the commits)\n", d.cfg.rate, d.cfg.duration)
	fmt.Fprintf(d.out, "reactor: compacts a partition at %d small files (< %s), quiet period %s, cool-down %s; merges manifests at %d\n",
		demoSmallFileCount, thresholds.Size(float64(demoTargetFileSize)*thresholds.DefaultSmallFileRatio),
		demoQuietPeriod, demoCooldown, demoManifestCount)
	fmt.Fprintf(d.out, "demo margins (built-ins in brackets): snapshots expire at %s old [5d]; the files they held are deleted %s later (min_reader_margin) [48h]\n",
		demoSnapshotMaxAge, demoMinReaderMargin)
	if d.cfg.showLog {
		fmt.Fprintf(d.out, "reactor's log: %s\n", d.cfg.logFile)
	}

	backlog := time.Now()
	if _, err := d.writer.Pace(ctx, streamwriter.PaceOptions{
		Rate: 1000, Commits: demoBacklog, Rows: d.cfg.rows,
		Partition: func(i int) string { return d.names[i%len(d.names)] },
	}); err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	before, err := d.observe(ctx, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "backlog written in %.1fs: %d data files, %d snapshots, %d data manifests; full scan %s, %.1fx the compacted copy\n\n",
		time.Since(backlog).Seconds(), before.table.DataFiles, before.table.Snapshots, before.table.DataManifests,
		roundMs(before.scan.Live), before.scan.Ratio())

	if err := startReactor(); err != nil {
		return err
	}
	defer d.w.Close()
	d.mu.Lock()
	d.pub = streamwriter.JetStreamPublisher(d.w.JetStream(), "iceberg.commits."+d.tableName(), nil)
	d.mu.Unlock()

	if addr := d.w.HTTPAddr(); addr != "" {
		fmt.Fprintf(d.out, "status page: %s\n", statusURL(addr))
	}
	fmt.Fprintln(d.out, d.header())
	d.start = time.Now()
	stopLive := d.live(ctx)
	_, werr := d.writer.Pace(ctx, streamwriter.PaceOptions{
		Rate: d.cfg.rate, Duration: d.cfg.duration, Rows: d.cfg.rows, Concurrency: demoWriters,
		Partition: d.partitionFor,
	})
	writeTime := time.Since(d.start)
	var (
		settled string
		serr    error
	)
	if werr == nil {
		commits, _ := d.writer.Stats()
		d.printf("-- writer stopped after %.1fs: %d commits; waiting for reactor to finish --", writeTime.Seconds(), commits-demoBacklog)
		settled, serr = d.settle(ctx)
	}
	stopLive()
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if werr != nil {
		return fmt.Errorf("writer: %w", werr)
	}
	if serr != nil {
		return serr
	}
	// The summary's scans get the probe's full repetitions.
	d.copies.MaxRuns, d.copies.RunBudget = 0, 0
	after, err := d.observe(ctx, true)
	if err != nil {
		return err
	}
	err = d.summary(ctx, before, after, writeTime, time.Since(d.start)-writeTime, settled)
	if err == nil || errors.Is(err, errMismatch) {
		d.printNext(d.out)
	}
	if d.cfg.serve && (err == nil || errors.Is(err, errMismatch)) {
		d.serveUntilInterrupted(ctx)
	}
	return err
}

// serveUntilInterrupted keeps reactor running, and its status pages
// served, until ctx ends (Ctrl-C): the writer has stopped, so a newcomer
// can look at a table that settled, and at expiry still at work on it.
func (d *demo) serveUntilInterrupted(ctx context.Context) {
	fmt.Fprintf(d.out, "\nstatus page: %s (reactor keeps running; Ctrl-C stops it)\n", statusURL(d.w.HTTPAddr()))
	<-ctx.Done()
}

// statusURL is the status page's URL on addr (a host:port the worker
// listens on); an unspecified host is reached on loopback.
func statusURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// partitionFor spreads commits: every other commit goes to p0, the rest
// round-robin over the other partitions.
func (d *demo) partitionFor(i int) string {
	n := len(d.names)
	if n == 1 || i%2 == 0 {
		return d.names[0]
	}
	return d.names[1+(i/2)%(n-1)]
}

// printf writes one line; the live printer and the main flow share d.out.
func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format+"\n", args...)
}

func roundMs(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
