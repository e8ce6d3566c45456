package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/icereactor/reactor/bench/setflag"
	"github.com/icereactor/reactor/thresholds"
)

// namespace holds the benchmark's tables.
const namespace = "bench"

// config is the command line, validated.
type config struct {
	replicas    []int // one phase per count, in order
	tables      int
	rate        float64 // commits per second per table
	partitions  int
	rows        int
	duration    time.Duration // measured window of each phase
	leaseTTL    time.Duration
	leaseShards int
	concurrency int // jobs at once per replica
	kill        bool
	killWait    time.Duration // how long to wait for a job on the victim
	afterKill   time.Duration // writers go on this long after the kill
	grace       time.Duration
	out         string
	thresholds  map[string]string // the thresholds file's defaults
	logLevel    slog.Level
	keepData    bool
}

const usageText = `Usage: go run ./bench/replicas [flags]

Replica benchmark: for each count in -replicas, a fresh NATS
server (embedded here, on a random loopback port) and SQLite catalog, -tables
tables each written by a paced streaming writer (commit events through
JetStream), and that many reactor replicas, each its own process running
worker.Start as reactor run --replica NAME --lease-ttl TTL wires it. Over
-duration it counts, from the job events: jobs per replica, jobs that ran
twice, jobs of one table that overlapped in two replicas, jobs failed from
replica races, jobs/s and each replica's CPU (/proc). In the last phase (with
-kill) it then waits until a job of the last replica has run half the median
job time, SIGKILLs it, and reports when each of its shards was taken by a
survivor (the lease bucket), the survivors' jobs on its tables, and the data
files the killed job left that no snapshot references, which it then ages past
the 24h orphan floor and removes with orphan cleanup. At the end every table's rows and checksum are
compared with what its writer wrote. It writes summary.txt and one log per
replica under -out. Exit status 1 when rows differ or the run failed; a
missed target is a result, not a failure.

The measurement in BENCHMARKS.md (section 15):
  go run ./bench/replicas -replicas 1,2,3 -tables 200 -rate 0.2 -duration 2m -out replicas-200
  go run ./bench/replicas -smoke              # 2 replicas, 8 tables, 15 s window, kill (~45 s)

Flags:
`

// benchThresholds are the thresholds file's defaults unless -set changes
// them: compactions that come steadily under a modest load.
var benchThresholds = map[string]string{
	"small_file_count": "5",
	"quiet_period":     "500ms",
	"max_quiet_wait":   "1s",
	"cooldown":         "1s",
}

func parseConfig(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	replicas := fs.String("replicas", "1,2,3", "replica `counts`, one phase each")
	tables := fs.Int("tables", 200, "tables, each with its own writer")
	rate := fs.Float64("rate", 0.2, "writer `commits` per second, per table")
	partitions := fs.Int("partitions", 2, "partitions per table, written round-robin")
	rows := fs.Int("rows", 10, "rows per commit")
	duration := fs.Duration("duration", 2*time.Minute, "measured window of each phase")
	leaseTTL := fs.Duration("lease-ttl", 5*time.Second, "replicas' --lease-ttl")
	leaseShards := fs.Int("lease-shards", 64, "replicas' --lease-shards")
	concurrency := fs.Int("concurrency", 2, "jobs at once per replica (--concurrency)")
	kill := fs.Bool("kill", true, "after the last phase's window, SIGKILL its last replica mid-job")
	killWait := fs.Duration("kill-wait", 30*time.Second, "how long to wait for a job to start on the replica to kill")
	afterKill := fs.Duration("after-kill", 40*time.Second, "how long the writers go on after the kill")
	grace := fs.Duration("grace", 20*time.Second, "at the end of a phase, how long replicas may finish running jobs")
	out := fs.String("out", "", "results `directory` (created; default a new replicas-* directory under the system temp dir)")
	var sets setflag.Flag
	fs.Var(&sets, "set", "a threshold of the replicas' thresholds file, `key=value` as in its defaults (repeatable)")
	logLevel := fs.String("log-level", "info", "replicas' log `level`: debug, info, warn or error")
	keepData := fs.Bool("keep-data", false, "keep each phase's warehouse, catalog and NATS store under -out")
	smoke := fs.Bool("smoke", false, "a short run to check it works: 2 replicas, 8 tables at 1 commit/s, 15 s, lease TTL 2s, kill (flags given explicitly win)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *smoke {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		smokeDefaults := map[string]string{"replicas": "2", "tables": "8", "rate": "1", "duration": "15s",
			"lease-ttl": "2s", "kill-wait": "20s", "after-kill": "10s", "grace": "5s"}
		for name, v := range smokeDefaults {
			if !given[name] {
				if err := fs.Set(name, v); err != nil {
					return config{}, err
				}
			}
		}
	}
	cfg := config{
		tables: *tables, rate: *rate, partitions: *partitions, rows: *rows, duration: *duration,
		leaseTTL: *leaseTTL, leaseShards: *leaseShards, concurrency: *concurrency, kill: *kill,
		killWait: *killWait, afterKill: *afterKill, grace: *grace, out: *out, keepData: *keepData,
		thresholds: map[string]string{},
	}
	for _, f := range strings.Split(*replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 16 {
			return config{}, fmt.Errorf("-replicas: want counts between 1 and 16 separated by commas, got %q", *replicas)
		}
		cfg.replicas = append(cfg.replicas, n)
	}
	for k, v := range benchThresholds {
		cfg.thresholds[k] = v
	}
	sets.Apply(cfg.thresholds)
	if err := cfg.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return config{}, fmt.Errorf("-log-level: %w", err)
	}
	switch {
	case !(cfg.rate > 0 && cfg.rate <= 100):
		return config{}, fmt.Errorf("-rate must be between 0 and 100 commits per second, got %v", cfg.rate)
	case cfg.tables < 1 || cfg.tables > 10000:
		return config{}, fmt.Errorf("-tables must be between 1 and 10000, got %d", cfg.tables)
	case cfg.partitions < 1 || cfg.partitions > 1000:
		return config{}, fmt.Errorf("-partitions must be between 1 and 1000, got %d", cfg.partitions)
	case cfg.rows < 1 || cfg.rows > 1_000_000:
		return config{}, fmt.Errorf("-rows must be between 1 and 1000000, got %d", cfg.rows)
	case cfg.duration <= 0 || cfg.leaseTTL <= 0 || cfg.grace <= 0 || cfg.killWait <= 0 || cfg.afterKill <= 0:
		return config{}, errors.New("-duration, -lease-ttl, -grace, -kill-wait and -after-kill must be positive")
	case cfg.leaseShards < 1 || cfg.concurrency < 1:
		return config{}, errors.New("-lease-shards and -concurrency must be at least 1")
	case cfg.kill && cfg.replicas[len(cfg.replicas)-1] < 2:
		return config{}, errors.New("-kill needs at least 2 replicas in the last phase (or -kill=false)")
	}
	if _, err := thresholds.Parse([]byte(cfg.thresholdsYAML())); err != nil {
		return config{}, fmt.Errorf("-set: %w", err)
	}
	if cfg.out == "" {
		dir, err := os.MkdirTemp("", "replicas-"+time.Now().Format("20060102-150405")+"-")
		if err != nil {
			return config{}, fmt.Errorf("results directory: %w", err)
		}
		cfg.out = dir
	}
	abs, err := filepath.Abs(cfg.out)
	if err != nil {
		return config{}, fmt.Errorf("-out: %w", err)
	}
	cfg.out = abs
	return cfg, nil
}

// thresholdsYAML is the replicas' thresholds file.
func (c config) thresholdsYAML() string {
	return fmt.Sprintf("namespaces: [%s]\ndefaults:\n", namespace) + setflag.DefaultsYAML(c.thresholds)
}
