package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/probe"
	"github.com/icereactor/reactor/streamwriter"
)

// errRowsDiffer: a table does not hold what its writer wrote.
var errRowsDiffer = errors.New("rows or checksum differ from what was written")

// benchTable is one table and its writer.
type benchTable struct {
	name     string
	ident    table.Identifier
	w        *streamwriter.Writer
	writeErr error
}

// phase is one replica count's run.
type phase struct {
	cfg      config
	n        int
	kill     bool
	dir      string
	out      io.Writer
	log      *slog.Logger
	nats     *embedded.NATS
	conn     *nats.Conn
	js       jetstream.JetStream
	cat      catalog.Catalog
	children []*child
	jobs     *jobLog
	leases   *leaseWatch
	tables   []*benchTable
	res      phaseResult
}

// run runs every phase and prints and writes the summary.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	thresholdsFile := filepath.Join(cfg.out, "thresholds.yaml")
	if err := os.WriteFile(thresholdsFile, []byte(cfg.thresholdsYAML()), 0o644); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var results []phaseResult
	var rowsErr error
	for i, n := range cfg.replicas {
		dir := filepath.Join(cfg.out, fmt.Sprintf("replicas-%d", n))
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			return fmt.Errorf("%s is not empty: give a new -out directory", dir)
		}
		p := &phase{cfg: cfg, n: n, kill: cfg.kill && i == len(cfg.replicas)-1, dir: dir, out: stdout, log: log}
		fmt.Fprintf(stdout, "== %d replica(s): %d tables x %g commits/s, %d partitions, %d rows/commit, %s, lease TTL %s ==\n",
			n, cfg.tables, cfg.rate, cfg.partitions, cfg.rows, cfg.duration, cfg.leaseTTL)
		err := p.run(ctx, thresholdsFile)
		if err != nil && !errors.Is(err, errRowsDiffer) {
			return fmt.Errorf("%d replicas: %w", n, err)
		}
		if err != nil {
			rowsErr = err
		}
		fmt.Fprint(stdout, p.res.text(cfg))
		results = append(results, p.res)
		if ctx.Err() != nil {
			break
		}
	}
	summary := header(cfg) + scalingText(results)
	for _, r := range results {
		summary += r.text(cfg)
	}
	fmt.Fprint(stdout, scalingText(results))
	if err := os.WriteFile(filepath.Join(cfg.out, "summary.txt"), []byte(summary), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	fmt.Fprintf(stdout, "results in %s: summary.txt, thresholds.yaml, replicas-N/rN.log\n", cfg.out)
	return rowsErr
}

// run is one phase: servers, tables, replicas, writers, the kill, the
// check. Everything it started is stopped before it returns.
func (p *phase) run(ctx context.Context, thresholdsFile string) (err error) {
	cfg := p.cfg
	p.res = phaseResult{replicas: p.n, killed: p.kill}
	dataDir := filepath.Join(p.dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	if !cfg.keepData {
		defer os.RemoveAll(dataDir)
	}
	if p.nats, err = embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(dataDir, "nats")}); err != nil {
		return err
	}
	defer p.nats.Shutdown()
	if p.conn, err = nats.Connect(p.nats.URL(), nats.Name("bench-replicas")); err != nil {
		return err
	}
	defer p.conn.Close()
	if p.js, err = jetstream.New(p.conn); err != nil {
		return err
	}
	if p.cat, err = embedded.OpenCatalog(ctx, filepath.Join(dataDir, "catalog")); err != nil {
		return err
	}
	defer closeCatalog(p.cat)
	t0 := time.Now()
	if err := p.createTables(ctx); err != nil {
		return err
	}
	fmt.Fprintf(p.out, "   %d tables created in %s\n", len(p.tables), time.Since(t0).Round(100*time.Millisecond))
	if p.jobs, err = watchJobs(p.conn); err != nil {
		return err
	}
	defer func() { _ = p.jobs.stop() }()

	defer p.stopChildren()
	for i := range p.n {
		name := fmt.Sprintf("r%d", i+1)
		c, err := startChild(ctx, childSpec{
			NATSURL: p.nats.URL(), DataDir: dataDir, ThresholdsFile: thresholdsFile, Replica: name,
			LeaseTTL: cfg.leaseTTL, LeaseShards: cfg.leaseShards, Concurrency: cfg.concurrency,
			LogLevel: cfg.logLevel.String(), ReadyFile: readyFile(p.dir, name), Grace: cfg.grace,
		}, filepath.Join(p.dir, name+".log"))
		if err != nil {
			return err
		}
		p.children = append(p.children, c)
		if i == 0 {
			if p.leases, err = watchLeases(ctx, p.js); err != nil {
				return err
			}
			defer p.leases.stop()
		}
	}
	if err := p.waitBalanced(ctx); err != nil {
		return err
	}

	p.res.loadStart, _ = probe.LoadAverage()
	cpu0 := p.cpu()
	start := time.Now()
	p.res.start = start
	stopWriters := make(chan struct{})
	writersDone := p.startWriters(ctx, start, stopWriters)
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopWriters) }) }
	defer stop()

	windowEnd := start.Add(cfg.duration)
	p.progressUntil(ctx, start, windowEnd)
	p.res.window = time.Since(start)
	p.res.cpu = p.cpuSince(cpu0)
	p.res.loadEnd, _ = probe.LoadAverage()
	p.res.commitsInWindow = p.commits()
	p.res.jobs = analyse(p.jobs.snapshot(), start, windowEnd)

	if p.kill && ctx.Err() == nil {
		p.killOne(ctx)
		select {
		case <-time.After(cfg.afterKill):
		case <-ctx.Done():
		}
	}
	stop()
	<-writersDone
	p.res.commits = p.commits()
	for _, t := range p.tables {
		if t.writeErr != nil {
			p.res.writerErrors++
		}
		_, conflicts := t.w.Stats()
		p.res.writerConflicts += conflicts
	}
	final := context.WithoutCancel(ctx)
	fmt.Fprintf(p.out, "   writers stopped at %s; stopping the replicas (grace %s)\n", time.Since(start).Round(time.Second), cfg.grace)
	p.stopChildren()
	if p.kill {
		p.finishKill(final)
		p.cleanLeftovers(final, thresholdsFile)
	}
	// The whole phase, with the kill: no job twice, none beside another.
	runs := p.jobs.snapshot()
	if p.res.kill.victim != "" {
		runs = closeKilled(runs, p.res.kill.victim, p.res.kill.at)
	}
	p.res.all = analyse(runs, time.Time{}, time.Now().Add(time.Hour))
	return p.verify(final)
}

// startWriters starts every table's writer: rows committed every 1/rate
// seconds, staggered so the tables' commits spread over the interval,
// until stop is closed. (streamwriter's Pace ends only at a fixed
// duration, or by cancelling the commits in flight, which would leave it
// unknown whether their rows landed.) A slot that comes due while the
// commit before it still runs is skipped, as Pace does.
func (p *phase) startWriters(ctx context.Context, start time.Time, stop <-chan struct{}) <-chan struct{} {
	interval := time.Duration(float64(time.Second) / p.cfg.rate)
	var wg sync.WaitGroup
	for i, t := range p.tables {
		offset := interval * time.Duration(i) / time.Duration(len(p.tables))
		wg.Go(func() {
			timer := time.NewTimer(time.Until(start.Add(offset)))
			defer timer.Stop()
			for slot := 0; ; slot++ {
				due := start.Add(offset + time.Duration(slot)*interval)
				if late := time.Since(due); late >= interval {
					slot += int(late / interval)
					due = start.Add(offset + time.Duration(slot)*interval)
				}
				timer.Reset(time.Until(due))
				select {
				case <-timer.C:
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
				// The commit runs to its end whatever happens meanwhile:
				// its rows must be known to be in the table or not.
				if _, err := t.w.Commit(context.WithoutCancel(ctx), fmt.Sprintf("p%d", slot%p.cfg.partitions), p.cfg.rows); err != nil {
					t.writeErr = err
					p.log.Error("writer stopped", "table", t.name, "error", err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

func closeCatalog(cat catalog.Catalog) {
	if c, ok := cat.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

func (p *phase) createTables(ctx context.Context) error {
	for i := range p.cfg.tables {
		name := fmt.Sprintf("t%03d", i)
		ident := table.Identifier{namespace, name}
		if _, err := streamwriter.CreateTable(ctx, p.cat, ident, nil); err != nil {
			return err
		}
		qualified := namespace + "." + name
		pub := streamwriter.JetStreamPublisher(p.js, "iceberg.commits."+qualified, p.log)
		p.tables = append(p.tables, &benchTable{name: qualified, ident: ident, w: streamwriter.AppendOnly(p.cat, ident, pub)})
	}
	return nil
}

// waitBalanced waits until every shard is held and each replica holds its
// share (shards / replicas, rounded down).
func (p *phase) waitBalanced(ctx context.Context) error {
	share := p.cfg.leaseShards / p.n
	deadline := time.Now().Add(2*time.Minute + 4*p.cfg.leaseTTL)
	for {
		held := p.leases.held()
		total, balanced := 0, len(held) == p.n
		for _, c := range p.children {
			total += held[c.name]
			if held[c.name] < share {
				balanced = false
			}
		}
		if total == p.cfg.leaseShards && balanced {
			fmt.Fprintf(p.out, "   replicas joined and balanced: %s\n", heldText(held))
			return nil
		}
		for _, c := range p.children {
			if c.Exited() {
				return fmt.Errorf("replica %s exited (%v); see %s", c.name, c.Err(), c.Log)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("shards not balanced after %s: %s", time.Since(deadline.Add(-2*time.Minute-4*p.cfg.leaseTTL)).Round(time.Second), heldText(held))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func heldText(held map[string]int) string {
	var parts []string
	for _, name := range sortedKeys(held) {
		parts = append(parts, fmt.Sprintf("%s %d shards", name, held[name]))
	}
	return strings.Join(parts, ", ")
}

// progressUntil prints a line every 15 s (or 5 s in short runs) until end.
func (p *phase) progressUntil(ctx context.Context, start, end time.Time) {
	every := 15 * time.Second
	if p.cfg.duration < time.Minute {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	timer := time.NewTimer(time.Until(end))
	defer timer.Stop()
	for {
		select {
		case <-tick.C:
			s := analyse(p.jobs.snapshot(), start, time.Now())
			la, _ := probe.LoadAverage()
			fmt.Fprintf(p.out, "   %6s  commits %6d  jobs %5d finished (%s)  %d running  %d failed  load %.1f\n",
				time.Since(start).Round(time.Second), p.commits(), s.finished, perReplicaText(s.perReplica),
				s.unfinished, s.raceFailures+s.otherFailures, la[0])
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (p *phase) commits() int {
	n := 0
	for _, t := range p.tables {
		c, _ := t.w.Stats()
		n += c
	}
	return n
}

// cpu is every live replica's CPU time so far.
func (p *phase) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, c := range p.children {
		if d, err := probe.ProcessCPU(c.Pid()); err == nil {
			out[c.name] = d
		}
	}
	return out
}

func (p *phase) cpuSince(from map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, d := range p.cpu() {
		if d0, ok := from[name]; ok {
			out[name] = d - d0
		}
	}
	return out
}

func (p *phase) stopChildren() {
	var wg sync.WaitGroup
	for _, c := range p.children {
		if c.Exited() {
			continue
		}
		wg.Go(func() {
			if err := c.Stop(p.cfg.grace); err != nil {
				p.log.Warn("replica did not stop cleanly", "replica", c.name, "error", err, "log", c.Log)
			}
		})
	}
	wg.Wait()
}

// verify reads every table back and compares it with its writer's tally.
func (p *phase) verify(ctx context.Context) error {
	for _, t := range p.tables {
		tbl, err := p.cat.LoadTable(ctx, t.ident)
		if err != nil {
			return fmt.Errorf("verify %s: %w", t.name, err)
		}
		contents, err := streamwriter.Read(ctx, tbl)
		if err != nil {
			return fmt.Errorf("verify %s: %w", t.name, err)
		}
		dups := 0
		for _, n := range contents.IDs {
			if n != 1 {
				dups++
			}
		}
		want := t.w.Written()
		if contents.Total == want && dups == 0 && int64(len(contents.IDs)) == want.Rows {
			p.res.tablesExact++
		} else if len(p.res.rowMismatches) < 5 {
			p.res.rowMismatches = append(p.res.rowMismatches, fmt.Sprintf("%s holds %v (%d duplicate ids), written %v", t.name, contents.Total, dups, want))
		}
		p.res.rows += want.Rows
		stray, err := strayFiles(ctx, tbl)
		if err != nil {
			return fmt.Errorf("verify %s: %w", t.name, err)
		}
		p.res.strayFiles += len(stray)
		for _, f := range stray {
			if len(p.res.straySamples) < 5 {
				p.res.straySamples = append(p.res.straySamples, fmt.Sprintf("%s (%d bytes, written %s into the phase)",
					f.path[len(localPath(tbl.Location()))+1:], f.size, f.modTime.Sub(p.res.start).Round(time.Millisecond)))
			}
		}
	}
	p.res.tablesChecked = len(p.tables)
	if p.res.tablesExact != len(p.tables) {
		return fmt.Errorf("%d of %d tables: %w", len(p.tables)-p.res.tablesExact, len(p.tables), errRowsDiffer)
	}
	return nil
}
