package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/worker"
)

// The demo's table and policy. The target file size is a table property
// (not a threshold) so the demo also shows reactor honouring it; it is small
// so that a commit of a few dozen rows is a "small file" and compaction has
// something to merge within seconds.
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
	// demoWriters commit concurrently, so one slow commit (a conflict being
	// retried) does not stall the rate.
	demoWriters = 4
	// demoSettleLimit bounds the wait for reactor after the writer stops.
	demoSettleLimit = 15 * time.Second
)

// partitionField is the field id of identity(category) in the table
// streamwriter.CreateTable creates.
const partitionField = 1000

// errMismatch reports that the table does not hold what the writer wrote.
var errMismatch = errors.New("table contents differ from what the writer wrote")

type demoConfig struct {
	rate       float64
	duration   time.Duration
	partitions int
	rows       int
	keep       bool
	logLevel   slog.Level
}

const demoDescription = `Runs everything embedded in a temporary directory: a NATS server, a SQLite
catalog, a partitioned table demo.events, a simulated streaming writer that
commits small batches (half of them to the hot partition p0) and publishes a
commit event for each, and reactor compacting the partitions that collect too
many small files. Prints one line per second and a summary that checks the
table holds exactly the rows written (exit status 1 if not).`

func parseDemoConfig(args []string, stdout io.Writer) (demoConfig, error) {
	fs := newFlagSet("demo", "demo [flags]", demoDescription)
	rate := fs.Float64("rate", 8, "writer `commits` per second")
	duration := fs.Duration("duration", 20*time.Second, "how long the writer writes")
	partitions := fs.Int("partitions", 4, "number of partitions written (p0 is hot)")
	rows := fs.Int("rows", 50, "rows per commit")
	keep := fs.Bool("keep", false, "keep the temporary directory (NATS store, catalog, table files)")
	logLevel := fs.String("log-level", "warn", "reactor's log `level` on stderr: debug, info, warn or error")
	if err := parseFlags(fs, args, stdout); err != nil {
		return demoConfig{}, err
	}
	cfg := demoConfig{rate: *rate, duration: *duration, partitions: *partitions, rows: *rows, keep: *keep}
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
	}
	return cfg, nil
}

// demoThresholds is the demo's policy, built in code so the demo needs no
// file. The target size is left to the table property.
func demoThresholds() (*thresholds.Config, error) {
	small, minInputs := demoSmallFileCount, demoMinInputFiles
	dur := func(d time.Duration) *thresholds.Duration { v := thresholds.Duration(d); return &v }
	cfg := &thresholds.Config{
		Namespaces: []string{demoNamespace},
		Defaults: thresholds.Policy{
			SmallFileCount:   &small,
			MinInputFiles:    &minInputs,
			QuietPeriod:      dur(demoQuietPeriod),
			MaxQuietWait:     dur(demoMaxQuietWait),
			Cooldown:         dur(demoCooldown),
			ConflictCooldown: dur(demoConflictCooldown),
			CommitRetryTime:  dur(demoCommitRetryTime),
		},
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("demo thresholds: %w", err)
	}
	return cfg, nil
}

// demoCmd is `reactor demo`.
func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseDemoConfig(args, stdout)
	if err != nil {
		return err
	}
	th, err := demoThresholds()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "reactor-demo-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	if cfg.keep {
		defer fmt.Fprintf(stdout, "kept the demo's files in %s\n", dir)
	} else {
		defer func() {
			if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
				err = fmt.Errorf("remove %s: %w", dir, rerr)
			}
		}()
	}

	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel})))
	met := metrics.New()
	w, err := worker.Start(ctx, worker.Config{
		DataDir:     dir,
		CatalogName: embedded.CatalogName,
		Thresholds:  th,
		Concurrency: 2,
		Logger:      log,
		Metrics:     met,
	})
	if err != nil {
		return fmt.Errorf("start reactor: %w", err)
	}
	defer w.Close()

	// The writer gets its own catalog handle on the same SQLite catalog, as a
	// separate streaming job would: its commits and reactor's race for real.
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

	d := &demo{cfg: cfg, out: stdout, w: w, met: met, cat: cat, ident: ident}
	d.names = make([]string, cfg.partitions)
	for i := range d.names {
		d.names[i] = fmt.Sprintf("p%d", i)
	}
	d.commits = map[string]int{}
	d.snapshotPartition = map[int64]string{}
	d.writer = streamwriter.New(cat, ident, d.publish)
	if cfg.keep {
		fmt.Fprintf(stdout, "demo files: %s\n", dir)
	}
	return d.run(ctx)
}

// demo is one run of `reactor demo`.
type demo struct {
	cfg    demoConfig
	out    io.Writer
	w      *worker.Worker
	met    *metrics.Metrics
	cat    catalog.Catalog // the writer's handle, also used to observe the table
	ident  table.Identifier
	writer *streamwriter.Writer
	names  []string // partition values, p0 first (the hot one)
	start  time.Time

	mu                sync.Mutex
	commits           map[string]int   // successful commits per partition
	snapshotPartition map[int64]string // writer snapshot -> partition it appended to
}

func (d *demo) tableName() string { return demoNamespace + "." + demoTableName }

func (d *demo) publish(ctx context.Context, ev events.CommitEvent) error {
	data, err := ev.Encode()
	if err != nil {
		return fmt.Errorf("encode commit event: %w", err)
	}
	if _, err := d.w.JS.Publish(ctx, "iceberg.commits."+ev.Namespace+"."+ev.Table, data); err != nil {
		return fmt.Errorf("publish commit event: %w", err)
	}
	return nil
}

func (d *demo) run(ctx context.Context) error {
	fmt.Fprintf(d.out, "reactor demo: table %s partitioned by category, %s=%s\n",
		d.tableName(), thresholds.TargetFileSizeProperty, demoTargetFileSize)
	fmt.Fprintf(d.out, "writer:  %g commits/s for %s, %d rows each, partitions p0..p%d (p0 is hot: half the commits)\n",
		d.cfg.rate, d.cfg.duration, d.cfg.rows, d.cfg.partitions-1)
	fmt.Fprintf(d.out, "reactor: compacts a partition at %d small files (< %s), quiet period %s, cool-down %s\n",
		demoSmallFileCount, thresholds.Size(float64(demoTargetFileSize)*thresholds.DefaultSmallFileRatio),
		demoQuietPeriod, demoCooldown)
	fmt.Fprintf(d.out, "per partition: live data files/small files; jobs: finished+running; conflicts: retried by reactor and writer\n\n")
	fmt.Fprintln(d.out, d.header())

	d.start = time.Now()
	stopLive := d.live(ctx)
	werr := d.write(ctx)
	writeTime := time.Since(d.start)
	commits, _ := d.writer.Stats()
	var (
		settled string
		serr    error
	)
	if werr == nil {
		d.printf("-- writer stopped after %.1fs: %d commits; waiting for reactor to finish --", writeTime.Seconds(), commits)
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
	return d.summary(ctx, writeTime, time.Since(d.start)-writeTime, settled)
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

// write runs the simulated streaming writer for the configured duration. A
// ticker paces the commits; several goroutines make them, so the rate holds
// while single commits are slowed down by conflicts. When the commits cannot
// keep up, ticks are dropped and the summary reports the achieved rate.
func (d *demo) write(ctx context.Context) error {
	// Commits run under ctx, not the writing deadline: a commit cut off
	// half-way would leave it unknown whether its rows are in the table.
	stop, cancel := context.WithTimeout(ctx, d.cfg.duration)
	defer cancel()
	work := make(chan string)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		writeErr error
		failed   atomic.Bool
	)
	for range demoWriters {
		wg.Go(func() {
			for part := range work {
				if failed.Load() {
					continue // drain the channel so the ticker never blocks
				}
				id, err := d.writer.Commit(ctx, part, d.cfg.rows)
				if err != nil {
					errOnce.Do(func() { writeErr = err })
					failed.Store(true)
					cancel()
					continue
				}
				d.mu.Lock()
				d.commits[part]++
				d.snapshotPartition[id] = part
				d.mu.Unlock()
			}
		})
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / d.cfg.rate))
	defer tick.Stop()
	// The last tick and the end of the duration coincide; the count keeps
	// the number of commits at rate*duration instead of leaving it to a race.
	planned := int(math.Ceil(d.cfg.rate * d.cfg.duration.Seconds()))
	for i := 0; ; i++ {
		next := work
		if i >= planned {
			next = nil // a nil channel blocks: wait out the duration
		}
		select {
		case next <- d.partitionFor(i):
		case <-stop.Done():
			close(work)
			wg.Wait()
			if writeErr == nil && ctx.Err() != nil {
				writeErr = ctx.Err()
			}
			return writeErr
		}
		select {
		case <-tick.C:
		case <-stop.Done():
		}
	}
}

// jobs reports how many jobs the planner scheduled and how many finished.
// The pool counts only finished jobs; the scheduled count comes from the
// metrics, so the difference is the number running.
func (d *demo) jobs() (scheduled, finished int) {
	return d.counter("reactor_jobs_scheduled_total"), d.w.Pool.Stats().Jobs
}

// counter sums a counter over all its labels. Gathering is how the
// Prometheus registry exposes values; reactor keeps no other copy.
func (d *demo) counter(name string) int {
	families, err := d.met.Registry.Gather()
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return int(sum)
}

// settle waits until reactor has nothing left to do: every event applied, no
// job running, and either every partition below the threshold or no new job
// for longer than a quiet period plus a cool-down (a partition can stay over
// the threshold when its files cannot be grouped, and then no job comes).
func (d *demo) settle(ctx context.Context) (string, error) {
	deadline := time.Now().Add(demoSettleLimit)
	idleFor := demoQuietPeriod + demoCooldown + time.Second
	lastSched, lastDone := d.jobs()
	lastChange := time.Now()
	for {
		sched, done := d.jobs()
		if sched != lastSched || done != lastDone {
			lastSched, lastDone, lastChange = sched, done, time.Now()
		}
		if sched == done && d.caughtUp(ctx) {
			_, parts := d.w.Planner.TableCounters(d.tableName())
			below := true
			for _, p := range parts {
				below = below && p.SmallFiles < demoSmallFileCount
			}
			if below {
				return "every partition below the threshold", nil
			}
			if time.Since(lastChange) > idleFor {
				return "no further job scheduled", nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("stopped waiting after %s", demoSettleLimit), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// caughtUp reports whether the planner's counters describe the table's
// current snapshot, i.e. every commit event has been applied.
func (d *demo) caughtUp(ctx context.Context) bool {
	tbl, err := d.cat.LoadTable(ctx, d.ident)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return false
	}
	snap, _ := d.w.Planner.TableCounters(d.tableName())
	return snap == tbl.CurrentSnapshot().SnapshotID
}

// live prints a progress line every second until the returned function is
// called; that function returns once the printer has stopped.
func (d *demo) live(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				d.printf("%s", d.line(ctx))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

// printf writes one line; the live printer and the main flow share d.out.
func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format+"\n", args...)
}

const partitionColumn = "%9s"

func (d *demo) header() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s %7s ", "elapsed", "commits")
	for _, n := range d.names {
		fmt.Fprintf(&b, partitionColumn, n)
	}
	fmt.Fprintf(&b, " %9s %5s %9s", "snapshots", "jobs", "conflicts")
	return b.String()
}

func (d *demo) line(ctx context.Context) string {
	commits, writerConflicts := d.writer.Stats()
	_, parts := d.w.Planner.TableCounters(d.tableName())
	byKey := make(map[string]planner.PartitionCounters, len(parts))
	for _, p := range parts {
		byKey[p.Key] = p
	}
	snapshots := "?"
	if tbl, err := d.cat.LoadTable(ctx, d.ident); err == nil {
		snapshots = strconv.Itoa(len(tbl.Metadata().Snapshots()))
	}
	// Conflicts come from the live counter, not the pool's stats, which add
	// a job's conflicts only when it finishes.
	conflicts := d.counter("reactor_commit_conflicts_total") + writerConflicts
	scheduled, finished := d.jobs()
	jobs := strconv.Itoa(finished)
	if scheduled > finished {
		jobs += fmt.Sprintf("+%d", scheduled-finished)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%6.0fs %7d ", time.Since(d.start).Seconds(), commits)
	for _, n := range d.names {
		cell := "-"
		if p, ok := byKey["category="+n]; ok {
			cell = fmt.Sprintf("%d/%d", p.DataFiles, p.SmallFiles)
		}
		fmt.Fprintf(&b, partitionColumn, cell)
	}
	fmt.Fprintf(&b, " %9s %5s %9d", snapshots, jobs, conflicts)
	return b.String()
}

// summary compares the table with what the writer wrote. Files "written"
// are counted from the writer's own snapshots (their added-data-files), and
// files "live" from a scan of the current snapshot, so neither number comes
// from reactor's bookkeeping.
func (d *demo) summary(ctx context.Context, writeTime, settleTime time.Duration, settled string) error {
	tbl, err := d.cat.LoadTable(ctx, d.ident)
	if err != nil {
		return fmt.Errorf("load %v: %w", d.ident, err)
	}
	commits, writerConflicts := d.writer.Stats()

	written := map[string]int{}
	reactorSnapshots := 0
	d.mu.Lock()
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[planner.SnapshotJobProperty] != "" {
			reactorSnapshots++
			continue
		}
		part, ok := d.snapshotPartition[s.SnapshotID]
		if !ok || s.Summary == nil {
			continue
		}
		n, err := strconv.Atoi(s.Summary.Properties["added-data-files"])
		if err != nil {
			d.mu.Unlock()
			return fmt.Errorf("snapshot %d: added-data-files: %w", s.SnapshotID, err)
		}
		written[part] += n
	}
	perPartitionCommits := make(map[string]int, len(d.commits))
	for k, v := range d.commits {
		perPartitionCommits[k] = v
	}
	d.mu.Unlock()

	live, small := map[string]int{}, map[string]int{}
	smallSize := int64(float64(demoTargetFileSize) * thresholds.DefaultSmallFileRatio)
	if tbl.CurrentSnapshot() != nil {
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return fmt.Errorf("plan files of %v: %w", d.ident, err)
		}
		for _, t := range tasks {
			part := fmt.Sprint(t.File.Partition()[partitionField])
			live[part]++
			if t.File.FileSizeBytes() < smallSize {
				small[part]++
			}
		}
	}
	contents, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	want := d.writer.Written()
	st := d.w.Pool.Stats()

	out := d.out
	fmt.Fprintf(out, "\nwriter: %d commits in %.1fs (%.1f/s), %d rows each; reactor settled %.1fs later (%s)\n",
		commits, writeTime.Seconds(), float64(commits)/writeTime.Seconds(), d.cfg.rows, settleTime.Seconds(), settled)
	fmt.Fprintf(out, "%-9s %7s %13s %10s %10s %8s\n", "partition", "commits", "files written", "files live", "small live", "rows")
	var totCommits, totWritten, totLive, totSmall int
	var totRows int64
	for _, n := range d.names {
		rows := contents.ByPartition[n].Rows
		fmt.Fprintf(out, "%-9s %7d %13d %10d %10d %8d\n", n, perPartitionCommits[n], written[n], live[n], small[n], rows)
		totCommits += perPartitionCommits[n]
		totWritten += written[n]
		totLive += live[n]
		totSmall += small[n]
		totRows += rows
	}
	fmt.Fprintf(out, "%-9s %7d %13d %10d %10d %8d\n", "total", totCommits, totWritten, totLive, totSmall, totRows)
	fmt.Fprintf(out, "data files: %d written by the writer, %d live after compaction\n", totWritten, totLive)
	fmt.Fprintf(out, "snapshots: %d (%d writer commits, %d reactor commits)\n",
		len(tbl.Metadata().Snapshots()), commits, reactorSnapshots)
	fmt.Fprintf(out, "jobs: %d (%d succeeded, %d no-op, %d gave up, %d failed), %d files rewritten into %d\n",
		st.Jobs, st.Succeeded, st.Noop, st.GaveUp, st.Failed, st.FilesRewritten, st.FilesAdded)
	fmt.Fprintf(out, "conflicts retried: %d by reactor, %d by the writer\n", st.Conflicts, writerConflicts)
	fmt.Fprintf(out, "written: %s\n", want)
	fmt.Fprintf(out, "read:    %s\n", contents.Total)

	var problems []string
	if contents.Total != want {
		problems = append(problems, fmt.Sprintf("read %s, wrote %s", contents.Total, want))
	}
	dup := 0
	for _, c := range contents.IDs {
		if c != 1 {
			dup++
		}
	}
	if dup > 0 {
		problems = append(problems, fmt.Sprintf("%d ids present more than once", dup))
	}
	if int64(len(contents.IDs)) != want.Rows {
		problems = append(problems, fmt.Sprintf("%d distinct ids, %d rows written", len(contents.IDs), want.Rows))
	}
	if len(problems) > 0 {
		fmt.Fprintf(out, "MISMATCH: %s\n", strings.Join(problems, "; "))
		return errMismatch
	}
	fmt.Fprintln(out, "OK: table holds exactly the rows written")
	return nil
}
