package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
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
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// errRowsDiffer: a table does not hold what its writer wrote.
var errRowsDiffer = errors.New("rows or checksum differ from what was written")

// soakTable is one table and its writer.
type soakTable struct {
	name    string // namespace.table
	ident   table.Identifier
	w       *streamwriter.Writer
	eff     thresholds.Effective
	pace    streamwriter.PaceStats
	paceErr error
	del     *deleter // nil: appends only
}

// soak is one run.
type soak struct {
	cfg    config
	th     *thresholds.Config
	out    io.Writer // progress and summary
	log    *slog.Logger
	mx     maintainer
	rw     *rewriteWatch // bytes a maintainer other than reactor rewrote
	cat    catalog.Catalog
	jobs   *probe.Jobs
	copies *probe.Compacted
	lat    probe.Latencies
	tables []*soakTable

	start, writersEnd    time.Time
	samples              []sample
	sampleErrors         int
	scanNext, index      int
	prevAt               time.Time
	prevCommits          int
	prevCPU              time.Duration
	peakRSS              int64 // the maintainer's, the largest sampled
	cpuErr               error
	quietStop, quietEnd  carefulScan        // the quiet tail's (quiet.go)
	callsStart, callsEnd map[string]float64 // reactor_catalog_calls_total when the writers start and stop (fleet.go)
	sampleCSV            *csvFile[sample]
	tableCSV             *csvFile[tableRow]
}

// run is the whole benchmark. It returns errRowsDiffer (wrapped) when a
// table's rows do not match; a missed target is reported, not returned.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) (err error) {
	th, err := loadThresholds(cfg.thresholdsFile, cfg.sets)
	if err != nil {
		return err
	}
	dataDir := filepath.Join(cfg.out, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) > 0 {
		return fmt.Errorf("%s is not empty: give a new -out directory", dataDir)
	}
	if !cfg.keepData {
		defer func() {
			if rerr := os.RemoveAll(dataDir); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	s := &soak{cfg: cfg, th: th, out: stdout,
		log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}

	logPath := filepath.Join(cfg.out, cfg.maintainer+".log")
	var peer *externalMaintainer
	if cfg.maintainer == maintainerReactor {
		rx, err := startReactor(ctx, cfg, dataDir, logPath)
		if err != nil {
			return err
		}
		s.mx = reactorMaintainer{rx}
	} else {
		if peer, err = startNATSOnly(cfg, dataDir); err != nil {
			return err
		}
		s.mx = peer
	}
	reactorStopped := false
	defer func() {
		if !reactorStopped {
			_ = s.mx.Stop(cfg.grace)
		}
	}()
	conn, err := nats.Connect(s.mx.NATSURL(), nats.Name("soak"))
	if err != nil {
		return fmt.Errorf("connect to reactor's NATS: %w", err)
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if s.jobs, err = probe.WatchJobs(conn, ""); err != nil {
		return err
	}
	if peer != nil {
		// reactor creates the commit stream; without it the writers'
		// events would find no stream. Nobody consumes them here.
		if err := triggers.EnsureStreams(ctx, js, triggers.CommitOptions{}); err != nil {
			return err
		}
	}
	if s.cat, err = embedded.OpenCatalog(ctx, filepath.Join(dataDir, "catalog")); err != nil {
		return err
	}
	defer closeCatalog(s.cat)
	if s.copies, err = probe.NewCompacted(ctx, filepath.Join(dataDir, "compacted")); err != nil {
		return err
	}
	defer s.copies.Close()
	if err := s.createTables(ctx, js); err != nil {
		return err
	}
	if peer != nil {
		if err := peer.launch(ctx, s.peerEnv(dataDir), filepath.Join(dataDir, "maintainer.ready"), logPath); err != nil {
			return err
		}
		var idents []table.Identifier
		for _, t := range s.tables {
			idents = append(idents, t.ident)
		}
		s.rw = watchRewrites(ctx, s.cat, idents)
		defer s.rw.Stop()
	}
	if s.sampleCSV, err = createCSV(filepath.Join(cfg.out, "samples.csv"), sampleColumns()); err != nil {
		return err
	}
	defer s.sampleCSV.Close()
	if s.tableCSV, err = createCSV(filepath.Join(cfg.out, "tables.csv"), tableColumns()); err != nil {
		return err
	}
	defer s.tableCSV.Close()

	header := s.header()
	fmt.Fprint(s.out, header)
	s.measure(ctx)

	// After the run, the soak still stops reactor, checks the rows and
	// writes its results, even when interrupted.
	final := context.WithoutCancel(ctx)
	interrupted := ctx.Err() != nil
	fmt.Fprintf(s.out, "-- writers stopped at %s; stopping %s (grace %s) --\n",
		s.writersEnd.Sub(s.start).Round(time.Second), cfg.maintainer, cfg.grace)
	endUsage, _ := s.mx.Usage()
	stopErr := s.mx.Stop(cfg.grace)
	reactorStopped = true
	if stopErr != nil {
		s.log.Warn("the maintainer did not stop cleanly", "maintainer", cfg.maintainer, "error", stopErr, "log", logPath)
	}
	if err := conn.Flush(); err == nil {
		_ = s.jobs.Stop()
	}
	checks, verr := s.verify(final)
	if verr != nil {
		return verr
	}
	summary := header + s.summary(checks, interrupted)
	if err := s.writeResult(filepath.Join(cfg.out, "result.json"), checks, endUsage); err != nil {
		return err
	}
	fmt.Fprint(s.out, summary[len(header):])
	if err := os.WriteFile(filepath.Join(cfg.out, "summary.txt"), []byte(summary), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if err := plotSamples(filepath.Join(cfg.out, "soak.png"), s.samples, cfg.warmup, s.plotNotes()); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	fmt.Fprintf(s.out, "results in %s: samples.csv, tables.csv, soak.png, summary.txt, result.json, %s.log\n", cfg.out, cfg.maintainer)
	for _, c := range checks {
		if !c.ok {
			return fmt.Errorf("%s: %w", c.table, errRowsDiffer)
		}
	}
	return nil
}

func closeCatalog(cat catalog.Catalog) {
	if c, ok := cat.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// createTables creates the soak's tables and their writers.
func (s *soak) createTables(ctx context.Context, js jetstream.JetStream) error {
	for i := range s.cfg.tables {
		name := "events"
		if s.cfg.tables > 1 {
			name = fmt.Sprintf("events_%02d", i)
		}
		ident := table.Identifier{namespace, name}
		props := maps.Clone(s.cfg.tableProps)
		if s.cfg.deleteEvery > 0 || s.cfg.upsertKeys > 0 {
			maps.Copy(props, streamwriter.MergeOnReadProperties)
		}
		tbl, err := streamwriter.CreateTable(ctx, s.cat, ident, props)
		if err != nil {
			return err
		}
		qualified := namespace + "." + name
		pub := streamwriter.JetStreamPublisher(js, "iceberg.commits."+qualified, s.log)
		t := &soakTable{name: qualified, ident: ident, eff: s.th.For(qualified, tbl.Properties())}
		switch {
		case s.cfg.deleteEvery > 0 || s.cfg.upsertKeys > 0:
			t.w = streamwriter.New(s.cat, ident, pub) // it keeps the live ids to delete or update
			if s.cfg.deleteEvery > 0 {
				t.del = newDeleter(t.w, qualified, s.cfg.deleteEvery, s.cfg.deleteRows, s.cfg.rows, s.log)
			}
		default:
			t.w = streamwriter.AppendOnly(s.cat, ident, pub)
		}
		s.tables = append(s.tables, t)
	}
	return nil
}

// measure runs the writers for the configured duration, sampling every
// interval, and takes a last sample when they stop.
func (s *soak) measure(ctx context.Context) {
	s.callsStart = s.scrapeCalls(ctx)
	s.start = time.Now()
	s.prevAt = s.start
	if u, err := s.mx.Usage(); err == nil {
		s.prevCPU = u.cpu
	} else {
		s.cpuErr = err
	}
	var wg sync.WaitGroup
	for _, t := range s.tables {
		if t.del != nil {
			t.del.start(ctx)
		}
		wg.Go(func() {
			t.pace, t.paceErr = t.w.Pace(ctx, streamwriter.PaceOptions{
				Rate: s.cfg.rate, Duration: s.cfg.duration, Rows: s.cfg.rows,
				Concurrency: s.cfg.writerConcurrency, Updates: s.cfg.upsertKeys,
				Partition: func(i int) string { return fmt.Sprintf("p%d", i%s.cfg.partitions) },
				OnCommit: func(c streamwriter.Committed) {
					s.lat.Add(c.Start.Add(c.Took), c.Took)
					if t.del != nil {
						t.del.committed(c.Seq)
					}
				},
			})
			if t.del != nil {
				t.del.stop()
			}
			if t.paceErr != nil && ctx.Err() == nil {
				s.log.Error("writer stopped", "table", t.name, "error", t.paceErr)
			}
		})
	}
	writersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(writersDone)
	}()
	tick := time.NewTicker(s.cfg.interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.sample(ctx)
			continue
		case <-writersDone:
		case <-ctx.Done():
			<-writersDone
		}
		break
	}
	s.writersEnd = time.Now()
	s.callsEnd = s.scrapeCalls(context.WithoutCancel(ctx))
	s.sample(context.WithoutCancel(ctx))
	s.quietTail(ctx)
}

// scrapeCalls reads the maintainer's catalog call counts (nil when it
// has none, or the scrape failed: the summary leaves them out).
func (s *soak) scrapeCalls(ctx context.Context) map[string]float64 {
	calls, err := catalogCalls(ctx, s.mx)
	if err != nil {
		s.log.Warn("catalog call counts not read", "error", err)
		return nil
	}
	return calls
}

// sample measures every table and appends a row to the CSVs.
func (s *soak) sample(ctx context.Context) {
	t0 := time.Now()
	row := sample{Elapsed: t0.Sub(s.start)}
	for _, t := range s.tables {
		commits, conflicts := t.w.Stats()
		row.Commits += commits
		row.WriterConflicts += conflicts
		row.RowsWritten += t.w.Written().Rows
		row.BytesWritten += t.w.WrittenBytes()
	}
	if dt := t0.Sub(s.prevAt).Seconds(); dt > 0 {
		row.CommitRate = float64(row.Commits-s.prevCommits) / dt
	}
	scan := map[int]bool{}
	if s.index%s.cfg.scanEvery == 0 {
		for range min(s.cfg.scanTables, len(s.tables)) {
			scan[s.scanNext] = true
			s.scanNext = (s.scanNext + 1) % len(s.tables)
		}
	}
	s.index++
	for i, t := range s.tables {
		ts, err := s.measureTable(ctx, t, scan[i])
		if err != nil {
			s.sampleErrors++
			s.log.Warn("sample failed; skipped", "table", t.name, "error", err)
			return
		}
		row.Tables = append(row.Tables, ts)
		p := ts.Probe
		row.DataFiles += p.DataFiles
		row.IdealFiles += p.IdealFiles
		row.AllowedFiles += ts.AllowedFiles
		row.DeleteFiles += p.DeleteFiles
		row.EqualityDeletesMax = max(row.EqualityDeletesMax, p.EqualityDeletesMax)
		row.PlannedFiles += p.PlannedFiles
		row.SnapshotsMax = max(row.SnapshotsMax, p.Snapshots)
		row.ManifestsMax = max(row.ManifestsMax, p.DataManifests)
		row.SnapshotBound = max(row.SnapshotBound, ts.SnapshotBound)
		row.ManifestBound = max(row.ManifestBound, ts.ManifestBound)
		row.DiskDataFiles += p.DiskDataFiles
		if sc := ts.Scan; sc != nil {
			row.ScanTables++
			row.LiveScan += sc.Live
			row.CompactedScan += sc.Compacted
			row.CompactedFiles += sc.CompactedFiles
			row.CopyBuild += sc.Build
			row.ScanRatio = max(row.ScanRatio, sc.Ratio())
		}
	}
	row.Jobs = s.jobs.Tally()
	row.BytesRewritten = row.Jobs.RewrittenBytes
	if s.rw != nil {
		row.BytesRewritten = s.rw.Bytes()
	}
	lat := s.lat.Interval()
	row.CommitP50, row.CommitP99, row.CommitN = lat.P50, lat.P99, lat.N
	if s.cpuErr == nil {
		if u, err := s.mx.Usage(); err == nil {
			row.ReactorCPU = u.cpu - s.prevCPU
			row.ReactorCPUPct = 100 * row.ReactorCPU.Seconds() / t0.Sub(s.prevAt).Seconds()
			row.MaintainerRSS = u.rss
			s.prevCPU = u.cpu
			s.peakRSS = max(s.peakRSS, u.rss, u.peak)
		}
	}
	if la, err := probe.LoadAverage(); err == nil {
		row.Load1 = la[0]
	}
	s.prevAt, s.prevCommits = t0, row.Commits
	row.SampleTime = time.Since(t0)
	s.samples = append(s.samples, row)
	if err := s.sampleCSV.Add(row); err != nil {
		s.log.Error("samples.csv", "error", err)
	}
	for _, ts := range row.Tables {
		if err := s.tableCSV.Add(tableRow{Elapsed: row.Elapsed, tableSample: ts}); err != nil {
			s.log.Error("tables.csv", "error", err)
		}
	}
	fmt.Fprintln(s.out, s.progress(row))
}

// measureTable samples one table; scan also times its full scan against
// the compacted copy.
func (s *soak) measureTable(ctx context.Context, t *soakTable, scan bool) (tableSample, error) {
	ts := tableSample{Table: t.name, SnapshotBound: t.eff.SnapshotCount, ManifestBound: t.eff.ManifestCount}
	tbl, err := s.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return ts, err
	}
	if ts.Probe, err = probe.Measure(ctx, tbl, t.eff.TargetFileSize); err != nil {
		return ts, err
	}
	ts.AllowedFiles = ts.Probe.IdealFiles + t.eff.SmallFileCount*s.cfg.partitions
	if scan {
		load := func(ctx context.Context) (*table.Table, error) { return s.cat.LoadTable(ctx, t.ident) }
		sc, err := s.copies.Compare(ctx, load, t.eff.TargetFileSize)
		if err != nil {
			return ts, err
		}
		ts.Scan = &sc
	}
	return ts, nil
}

// progress is the line printed per sample.
func (s *soak) progress(r sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s  commits %6d (%4.1f/s)  files %5d ideal %d (<=%d)  snaps %5d  mfst %5d",
		r.Elapsed.Round(time.Second), r.Commits, r.CommitRate, r.DataFiles, r.IdealFiles, r.AllowedFiles,
		r.SnapshotsMax, r.ManifestsMax)
	if r.DeleteFiles > 0 {
		fmt.Fprintf(&b, "  deletes %d", r.DeleteFiles)
	}
	if r.EqualityDeletesMax > 0 {
		fmt.Fprintf(&b, " (eq <= %d per partition)", r.EqualityDeletesMax)
	}
	if r.ScanTables > 0 {
		fmt.Fprintf(&b, "  scan %5.1fx", r.ScanRatio)
	} else {
		b.WriteString("  scan     -")
	}
	fmt.Fprintf(&b, "  wamp %4.1fx  commit p50 %4s p99 %5s  cpu %3.0f%%  jobs %d ok %d gave up",
		r.WriteAmp(), shortDur(r.CommitP50), shortDur(r.CommitP99), r.ReactorCPUPct,
		r.Jobs.Outcome("succeeded")+r.Jobs.Outcome("noop"), r.Jobs.Outcome("gave_up"))
	if n := r.Jobs.Outcome("failed"); n > 0 {
		fmt.Fprintf(&b, " %d failed", n)
	}
	if n := r.Jobs.Running(); n > 0 {
		fmt.Fprintf(&b, " %d due", n)
	}
	fmt.Fprintf(&b, "  load %.1f", r.Load1)
	return b.String()
}

// shortDur renders a latency compactly: 850µs, 18ms, 1.2s.
func shortDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// rowCheck is one table's end-of-run comparison.
type rowCheck struct {
	table     string
	want, got streamwriter.Tally
	dupIDs    int
	ok        bool
}

// verify reads every table back and compares it with its writer's tally.
func (s *soak) verify(ctx context.Context) ([]rowCheck, error) {
	var checks []rowCheck
	for _, t := range s.tables {
		tbl, err := s.cat.LoadTable(ctx, t.ident)
		if err != nil {
			return nil, fmt.Errorf("verify %s: %w", t.name, err)
		}
		contents, err := streamwriter.Read(ctx, tbl)
		if err != nil {
			return nil, fmt.Errorf("verify %s: %w", t.name, err)
		}
		c := rowCheck{table: t.name, want: t.w.Written(), got: contents.Total}
		for _, n := range contents.IDs {
			if n != 1 {
				c.dupIDs++
			}
		}
		c.ok = c.got == c.want && c.dupIDs == 0 && int64(len(contents.IDs)) == c.want.Rows
		checks = append(checks, c)
	}
	return checks, nil
}
