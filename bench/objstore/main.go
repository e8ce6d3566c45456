// Command objstore measures reactor's jobs on an s3:// warehouse (or, with
// -fake-gcs-server or -azurite, a gs:// or abfs:// one on the store's
// emulator) over a network with added latency: the embedded S3 gateway on loopback, a
// counting HTTP front (requests by kind, bytes each way) before it, and a
// TCP proxy before that which delays each direction by half the round
// trip and counts the connections opened through it. For each latency a
// fresh table of small files is written straight to the gateway (not
// timed), then `plan`, `orphans` (dry run), `compact` and `expire` run on
// it through the proxy, in that order, in this process, and each prints
// wall time, CPU time (getrusage, the gateway's included), peak resident
// memory (VmHWM, reset before each command; the gateway's included),
// requests, new connections, bytes, and its wall time as a ratio to the
// same command at 0 ms (or the first latency). The latency "local" runs
// the same commands on a table of the same shape on local disk, the
// figure "today's on local disk" compares against. With -minio the S3
// server is a MinIO process instead of the gateway, and its CPU is
// reported in a column of its own.
//
//	go run ./bench/objstore -files 700 -latencies local,0,2,10,30
//	go run ./bench/objstore -minio ~/.cache/reactor-realparts/bin/minio-... -latencies 0,10,30
//	go run ./bench/objstore -fake-gcs-server ~/.cache/reactor-cloudparts/bin/fake-gcs-server-... -latencies 0
//	go run ./bench/objstore -azurite ~/.cache/reactor-cloudparts/npm/node_modules/.bin/azurite-blob -latencies 0
//
// It is a benchmark, not part of the reactor binary; BENCHMARKS.md
// sections 18 and 24 hold its results.
//
// # Files
//
//   - main.go: the flags, a run per latency and command, the printed table.
//   - table.go: the generated table of small Parquet files, written straight to
//     the store.
//   - counter.go: the counting HTTP front (requests by kind, bytes each way).
//   - minio.go: the S3 servers: the embedded gateway, or a MinIO process (-minio).
//   - emulators.go: fake-gcs-server and Azurite as processes (-fake-gcs-server,
//     -azurite).
//   - memory.go: peak resident memory (VmHWM, reset before each command) and the
//     heap profile at the heap's peak.
//
// The latency proxy is package bench/latencyproxy.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/bench/latencyproxy"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/s3gateway"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/objectio"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

const bucket = "bench"

func main() {
	var (
		files      = flag.Int("files", 700, "data files in the table")
		rows       = flag.Int("rows", 1600, "rows per data file (1,600 rows make a file of about 300 KB)")
		partitions = flag.Int("partitions", 7, "partitions the files are spread over")
		perCommit  = flag.Int("per-commit", 10, "files per generating commit (one manifest each)")
		latencies  = flag.String("latencies", "0,2,10,30", "added round trips in milliseconds, comma-separated; \"local\" for the table on local disk")
		commands   = flag.String("commands", "plan,orphans,compact,expire", "commands to time, in this order")
		work       = flag.String("work", "", "work directory (default: a new one in the system temporary directory, removed at the end)")
		verbose    = flag.Bool("v", false, "log the jobs' lines")
		readConc   = flag.Int("read-concurrency", 0, "reactor.read-concurrency for the timed commands (0: objectio's default)")
		repeat     = flag.Int("repeat", 1, "times each command runs per latency; the row is the run with the median wall time (plan and orphans only: compact and expire change the table)")
		memProfile = flag.String("memprofile", "", "write a heap profile to this file at every new peak of the heap in use")
		minioBin   = flag.String("minio", "", "run against this MinIO binary (realparts/setup.sh builds one into ~/.cache/reactor-realparts/bin) instead of the embedded gateway")
		gcsBin     = flag.String("fake-gcs-server", "", "run on a gs:// warehouse on this fake-gcs-server binary, GCS's emulator (cloudparts/setup.sh builds one into ~/.cache/reactor-cloudparts/bin)")
		azuriteBin = flag.String("azurite", "", "run on an abfs:// warehouse on this azurite-blob, Azure Blob storage's emulator (cloudparts/setup.sh installs it under ~/.cache/reactor-cloudparts)")
		trace      = flag.Bool("trace", false, "print every request of the timed commands (start ms, duration ms, in flight, method, target)")
	)
	flag.Parse()
	if *memProfile != "" {
		stop := make(chan struct{})
		defer close(stop)
		go peakHeapProfiler(*memProfile, stop)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *files, *rows, *partitions, *perCommit, *latencies, *commands, *work, *verbose, *trace, *repeat, *readConc, *minioBin, *gcsBin, *azuriteBin); err != nil {
		fmt.Fprintln(os.Stderr, "objstore:", err)
		os.Exit(1)
	}
}

type row struct {
	cmd   string
	rttMS int
	wall  time.Duration
	cpu   time.Duration
	// serverCPU is a separate S3 server's (MinIO's) CPU; the embedded
	// gateway's is in cpu.
	serverCPU time.Duration
	conns     int64
	peakRSS   int64 // bytes
	c         snapshot
	outcome   string
}

func run(ctx context.Context, files, rows, partitions, perCommit int, latencies, commands, work string, verbose, trace bool, repeat, readConc int, minioBin, gcsBin, azuriteBin string) error {
	var rtts []int
	for _, s := range strings.Split(latencies, ",") {
		if strings.TrimSpace(s) == "local" {
			rtts = append(rtts, localDisk)
			continue
		}
		ms, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || ms < 0 {
			return fmt.Errorf("bad latency %q", s)
		}
		rtts = append(rtts, ms)
	}
	if work == "" {
		dir, err := os.MkdirTemp("", "reactor-objstore-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	work, err := filepath.Abs(work)
	if err != nil {
		return err
	}
	var gw server
	switch {
	case minioBin != "":
		var m *minio
		m, err = startMinio(ctx, minioBin, filepath.Join(work, "minio", "data"))
		gw = s3Store{m}
	case gcsBin != "":
		gw, err = startFakeGCS(ctx, gcsBin, filepath.Join(work, "gcs"))
	case azuriteBin != "":
		gw, err = startAzurite(ctx, azuriteBin, filepath.Join(work, "azurite"))
	default:
		var g *s3gateway.Gateway
		g, err = s3gateway.Start(ctx, s3gateway.Options{RootDir: filepath.Join(work, "gateway")})
		gw = s3Store{g}
	}
	if err != nil {
		return err
	}
	defer gw.Close()
	serverCPUTime := func() time.Duration { return 0 }
	if sc, ok := gw.(serverCPU); ok {
		serverCPUTime = sc.CPU
	}
	if err := gw.CreateBucket(ctx, bucket); err != nil {
		return err
	}
	var cnt counts
	_, isGCS := gw.(*fakeGCS)
	front, stopFront, err := startCounter(gw.Endpoint(), isGCS, &cnt)
	if err != nil {
		return err
	}
	defer stopFront()

	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	direct, err := openCatalog(ctx, work, gw.Warehouse(bucket), gw.Properties(hostOf(gw.Endpoint())))
	if err != nil {
		return err
	}
	if err := direct.CreateNamespace(ctx, benchNamespace, nil); err != nil {
		return err
	}
	cfg, err := thresholds.Parse([]byte(`defaults:
  target_file_size: 128MiB
  min_input_files: 2
  small_file_count: 2
  max_group_size: 1TiB
  partial_progress_max_commits: 1
  min_reader_margin: 0s
`))
	if err != nil {
		return err
	}

	var results []row
	for _, ms := range rtts {
		ident := table.Identifier{"bench", fmt.Sprintf("t%dms", ms)}
		gen := direct
		var local catalog.Catalog
		if ms == localDisk {
			ident = table.Identifier{"bench", "tlocal"}
			if local, err = openCatalog(ctx, work, "file://"+filepath.Join(work, "local"), nil); err != nil {
				return err
			}
			gen = local
		}
		t0 := time.Now()
		bytes, err := generate(ctx, gen, ident, files, rows, partitions, perCommit)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "generated %v: %d files, %.1f MB in %s\n", ident, files, float64(bytes)/1e6, time.Since(t0).Round(time.Millisecond))

		px, cat := &latencyproxy.Proxy{}, local // the local table counts no connections
		if ms != localDisk {
			if px, err = latencyproxy.Start(front, time.Duration(ms)*time.Millisecond); err != nil {
				return err
			}
			props := gw.Properties(px.Addr())
			if readConc > 0 {
				props[objectio.ReadConcurrencyProperty] = strconv.Itoa(readConc)
			}
			if cat, err = openCatalog(ctx, work, gw.Warehouse(bucket), props); err != nil {
				px.Close()
				return err
			}
		}
		for _, cmd := range strings.Split(commands, ",") {
			runs := 1
			if cmd == "plan" || cmd == "orphans" {
				runs = max(repeat, 1)
			}
			var reps []row
			for range runs {
				resetPeakRSS()
				before, conns0, cpu0, server0 := cnt.snap(), px.Conns.Load(), cpuTime(), serverCPUTime()
				start := time.Now()
				if trace {
					cnt.trace = func(at, took time.Duration, n int64, method, target string) {
						fmt.Fprintf(os.Stderr, "trace %s %dms %8.1f %6.1f %3d %s %s\n", cmd, ms,
							float64(at-time.Duration(start.UnixNano()))/1e6, float64(took)/1e6, n, method, target)
					}
				}
				outcome, err := runCommand(ctx, cmd, cat, ident, cfg, log)
				r := row{cmd: cmd, rttMS: ms, wall: time.Since(start), cpu: cpuTime() - cpu0, serverCPU: serverCPUTime() - server0, conns: px.Conns.Load() - conns0,
					peakRSS: peakRSS(), c: cnt.snap().minus(before), outcome: outcome}
				if err != nil {
					closeProxy(px, ms)
					return fmt.Errorf("%s at %d ms: %w", cmd, ms, err)
				}
				fmt.Fprintf(os.Stderr, "%s at %d ms: %s in %s\n", cmd, ms, outcome, r.wall.Round(time.Millisecond))
				reps = append(reps, r)
			}
			slices.SortFunc(reps, func(a, b row) int { return cmp.Compare(a.wall, b.wall) })
			results = append(results, reps[len(reps)/2])
		}
		closeProxy(px, ms)
	}
	printTable(results, files)
	return nil
}

func openCatalog(ctx context.Context, work, warehouse string, s3props map[string]string) (catalog.Catalog, error) {
	props, err := embedded.CatalogProperties(work)
	if err != nil {
		return nil, err
	}
	props["warehouse"] = warehouse
	for k, v := range s3props {
		props[k] = v
	}
	return catalog.Load(ctx, embedded.CatalogName, iceberg.Properties(props))
}

func runCommand(ctx context.Context, cmd string, cat catalog.Catalog, ident table.Identifier, cfg *thresholds.Config, log *slog.Logger) (string, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return "", err
	}
	now := time.Now()
	var (
		kind jobkind.Kind
		mo   planner.ManualOptions
	)
	switch cmd {
	case "plan":
		p, err := planner.Explain(ctx, tbl, cfg, now)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d jobs due", len(p.Jobs)), nil
	case "compact":
		kind = jobkind.Compact
	case "expire":
		kind, mo.OlderThan, mo.RetainLast = jobkind.ExpireSnapshots, time.Millisecond, 1
	case "orphans":
		kind, mo.DryRun = jobkind.RemoveOrphans, true
	default:
		return "", fmt.Errorf("unknown command %q", cmd)
	}
	job, err := planner.ManualJob(ctx, tbl, cfg, kind, mo, now)
	if err != nil {
		return "", err
	}
	exec, err := executor.New(executor.Options{Catalog: cat, Logger: log, Metrics: metrics.New(),
		Concurrency: thresholds.DefaultConcurrency})
	if err != nil {
		return "", err
	}
	res, rep := exec.Run(ctx, job)
	if res.Err != nil {
		return "", res.Err
	}
	return fmt.Sprintf("%s (%v)", res.Outcome, rep.CountMap(kind)), nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func printTable(rows []row, files int) {
	base := map[string]time.Duration{}
	for _, r := range rows {
		if _, ok := base[r.cmd]; !ok && r.rttMS == 0 {
			base[r.cmd] = r.wall
		}
	}
	for _, r := range rows {
		if _, ok := base[r.cmd]; !ok {
			base[r.cmd] = r.wall
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "command\tRTT ms\twall s\tratio\tCPU s\tS3 CPU s\tpeak MB\trequests\treq/file\tGET\tranged GET\tHEAD\tPUT\tLIST\tDELETE\tPOST\tconns\tMB down\tMB up\t")
	for _, r := range rows {
		rtt := strconv.Itoa(r.rttMS)
		if r.rttMS == localDisk {
			rtt = "local"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2fx\t%.2f\t%.2f\t%.0f\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t\n", r.cmd, rtt,
			r.wall.Seconds(), r.wall.Seconds()/base[r.cmd].Seconds(), r.cpu.Seconds(), r.serverCPU.Seconds(), float64(r.peakRSS)/1e6, r.c.Requests, float64(r.c.Requests)/float64(files),
			r.c.GETs, r.c.RangedGETs, r.c.HEADs, r.c.PUTs, r.c.LISTs, r.c.DELETEs, r.c.POSTs, r.conns,
			float64(r.c.BytesDown)/1e6, float64(r.c.BytesUp)/1e6)
	}
	_ = tw.Flush()
}

// closeProxy closes the proxy of a latency run; the local run has none.
func closeProxy(px *latencyproxy.Proxy, ms int) {
	if ms != localDisk {
		px.Close()
	}
}
