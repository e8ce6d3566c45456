package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/icereactor/reactor/bench/setflag"
	"github.com/icereactor/reactor/thresholds"
)

// namespace holds the soak's tables.
const namespace = "soak"

// config is the soak's command line, validated.
type config struct {
	rate               float64 // commits per second per table
	partitions         int
	tables             int
	rows               int // rows per commit
	duration           time.Duration
	interval           time.Duration
	warmup             time.Duration
	window             time.Duration
	allowance          time.Duration
	out                string
	thresholdsFile     string
	sets               []string // key=value settings over the file's defaults
	tableProps         map[string]string
	writerConcurrency  int
	scanEvery          int
	scanTables         int
	keepData           bool
	cpuProfile         string
	logLevel           slog.Level
	grace              time.Duration
	quietTail          time.Duration // sample this long after the writers stop (quiet.go)
	replot             string        // redraw this results directory's plot and exit
	maintainer         string        // reactor, none, or the name of -maintainer-cmd (maintainer.go)
	maintainerCmd      string
	deleteEvery        int // every n-th commit deletes deleteRows rows by position (deletes.go); 0: appends only
	upsertKeys         int // every commit replaces this many live keys of its partition by equality delete (a CDC sink); 0: appends
	deleteRows         int
	fleet              bool // the fleet preset (fleet.go): its targets are reported
	metadataCacheBytes int64
}

const usageText = `Usage: go run ./bench/soak [flags]

Soak benchmark: a streaming writer (iceberg-go, the path reactor write uses)
commits batches of rows to one or more tables at a steady rate, reactor runs
beside it in its own process as reactor run wires it (embedded NATS and SQLite
catalog), and every -interval the soak samples each table from the catalog:
live data files against the ideal, delete files, snapshots, data manifests,
the files a full scan plans, a full scan's time against the same rows fully
compacted, bytes rewritten over bytes written, the writer's commit latency,
reactor's CPU and its jobs by kind and outcome. It writes samples.csv,
tables.csv, one plot (soak.png, at most 256 colours), summary.txt, result.json
and reactor.log to -out (bench/soak/results commits all but the log), checks every
table's rows and checksum at the end, and prints the summary against the
streaming targets (docs/design.md#streaming-targets). Exit status 1 when the rows do not match or the run
failed; a missed target is a result, not a failure.

The streaming scenarios:
  go run ./bench/soak -rate 5 -partitions 8 -duration 15m -out soak-5x1
  go run ./bench/soak -rate 20 -partitions 8 -duration 5m -out soak-20x1
  go run ./bench/soak -rate 1 -tables 20 -partitions 8 -duration 10m -out soak-1x20
  go run ./bench/soak -rate 5 -partitions 8 -upsert-keys 20 -duration 5m -out soak-upsert  # a CDC table
  go run ./bench/soak -smoke                       # 20 s, to check it works

The fleet (many slow tables; CPU per commit and per table, memory, catalog
calls per second, against the fleet targets):
  go run ./bench/soak -fleet                       # 1,000 tables at one commit per 10 s, 10 minutes
  go run ./bench/soak -fleet -tables 10000         # 10,000 tables

Another maintainer in reactor's place (the peers: interop/peers):
  go run ./bench/soak -maintainer flink -maintainer-cmd 'java ... FlinkMaintenance'
  go run ./bench/soak -maintainer none             # nothing maintains the table
The command runs in its own process group with SOAK_CATALOG_DB,
SOAK_CATALOG_NAME, SOAK_WAREHOUSE, SOAK_TABLES, SOAK_TARGET_FILE_SIZE and
SOAK_READY (a file it creates once it maintains) in its environment; the
soak samples its CPU time and memory as it does reactor's, counts the bytes
it rewrote from the tables' replace snapshots, and ends it with SIGTERM.

Flags:
`

func parseConfig(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	rate := fs.Float64("rate", 5, "writer `commits` per second, per table")
	partitions := fs.Int("partitions", 8, "partitions per table, written round-robin")
	tables := fs.Int("tables", 1, "tables, each with its own writer (at most 10000)")
	rows := fs.Int("rows", 100, "rows per commit (batch size)")
	duration := fs.Duration("duration", 15*time.Minute, "how long the writers write")
	interval := fs.Duration("interval", 15*time.Second, "time between two samples")
	warmup := fs.Duration("warmup", 2*time.Minute, "targets are checked on samples after this")
	window := fs.Duration("window", time.Minute, "commit latency: the first and the last window of the run are compared")
	allowance := fs.Duration("allowance", 10*time.Second,
		"snapshot and manifest bounds allow this many seconds of commits beyond the configured count (reactor's reaction time)")
	out := fs.String("out", "", "results `directory` (created; default a new soak-* directory under the system temp dir)")
	thresholdsFile := fs.String("thresholds", "", "reactor's thresholds YAML `file` (default: the built-in defaults)")
	var sets, props setflag.Flag
	fs.Var(&sets, "set", "a threshold over the file's defaults, `key=value` as in the YAML (repeatable): -set quiet_period=500ms")
	fs.Var(&props, "table-prop", "a property of the soak's tables, `key=value` (repeatable): -table-prop write.target-file-size-bytes=1048576")
	writerConcurrency := fs.Int("writer-concurrency", 1, "commits in flight per table (1: a streaming job commits one batch at a time)")
	scanEvery := fs.Int("scan-every", 1, "time the full scans every `n`th sample (they read every row)")
	scanTables := fs.Int("scan-tables", 4, "full scans per sample, rotating over the tables")
	keepData := fs.Bool("keep-data", false, "keep the warehouse, catalog and NATS store under -out/data")
	cpuProfile := fs.String("reactor-cpuprofile", "", "write the reactor process's CPU profile to `file` (go tool pprof reads it)")
	logLevel := fs.String("log-level", "info", "reactor's log `level` in -out/reactor.log: debug, info, warn or error")
	grace := fs.Duration("grace", 30*time.Second, "at the end, how long reactor may finish its running jobs")
	quietTail := fs.Duration("quiet-tail", 0, "after the writers stop, keep sampling the unwritten tables this long (0: none): the quiet targets")
	replot := fs.String("replot", "", "redraw `dir`/soak.png from dir/samples.csv (with -warmup) and exit")
	maintainer := fs.String("maintainer", maintainerReactor, "what maintains the tables: reactor, none, or a `name` for -maintainer-cmd")
	maintainerCmd := fs.String("maintainer-cmd", "", "the maintainer's shell `command` (with -maintainer NAME)")
	deleteEvery := fs.Int("delete-every", 0, "every `n`th commit also deletes -delete-rows rows written n/2 commits before, by position (merge-on-read); 0: appends only")
	deleteRows := fs.Int("delete-rows", 10, "rows per delete (with -delete-every)")
	upsertKeys := fs.Int("upsert-keys", 0, "every commit is an upsert: `n` of its -rows replace live rows of its partition by key (an equality delete of their ids and the rows again, one row delta, as a Flink upsert sink commits); 0: appends")
	metadataCacheBytes := fs.Int64("metadata-cache-bytes", 0, "reactor's parsed-metadata cache bound in `bytes` (0: no cache, reactor's default)")
	fleet := fs.Bool("fleet", false, "the fleet scenario: defaults of -tables 1000 -rate 0.1 -partitions 4 -rows 20 -duration 10m -interval 1m -warmup 3m -window 2m -scan-tables 2 -scan-every 2 (flags given explicitly win), and the fleet targets reported")
	smoke := fs.Bool("smoke", false, "a short run to check the soak works: 20s, samples every 2s, 4s warm-up, 5s latency windows (flags given explicitly win)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *replot != "" {
		return config{replot: *replot, warmup: *warmup}, nil
	}
	if *fleet {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for name, v := range fleetDefaults {
			if !given[name] {
				if err := fs.Set(name, v); err != nil {
					return config{}, fmt.Errorf("-fleet: %s=%s: %w", name, v, err)
				}
			}
		}
	}
	if *smoke {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for name, v := range map[string]*time.Duration{"duration": duration, "interval": interval, "warmup": warmup, "window": window} {
			if !given[name] {
				*v = map[string]time.Duration{"duration": 20 * time.Second, "interval": 2 * time.Second,
					"warmup": 4 * time.Second, "window": 5 * time.Second}[name]
			}
		}
	}
	cfg := config{
		rate: *rate, partitions: *partitions, tables: *tables, rows: *rows, duration: *duration,
		interval: *interval, warmup: *warmup, window: *window, allowance: *allowance, out: *out,
		thresholdsFile: *thresholdsFile, sets: sets, tableProps: map[string]string{},
		writerConcurrency: *writerConcurrency, scanEvery: *scanEvery, scanTables: *scanTables,
		keepData: *keepData, cpuProfile: *cpuProfile, grace: *grace, quietTail: *quietTail,
		maintainer: *maintainer, maintainerCmd: *maintainerCmd, deleteEvery: *deleteEvery, deleteRows: *deleteRows,
		upsertKeys: *upsertKeys, fleet: *fleet, metadataCacheBytes: *metadataCacheBytes,
	}
	props.Apply(cfg.tableProps)
	if err := cfg.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return config{}, fmt.Errorf("-log-level: %w", err)
	}
	switch {
	case !(cfg.rate > 0 && cfg.rate <= 1000):
		return config{}, fmt.Errorf("-rate must be between 0 and 1000 commits per second, got %v", cfg.rate)
	case cfg.partitions < 1 || cfg.partitions > 1000:
		return config{}, fmt.Errorf("-partitions must be between 1 and 1000, got %d", cfg.partitions)
	case cfg.tables < 1 || cfg.tables > 10000:
		return config{}, fmt.Errorf("-tables must be between 1 and 10000, got %d", cfg.tables)
	case cfg.rows < 1 || cfg.rows > 1_000_000:
		return config{}, fmt.Errorf("-rows must be between 1 and 1000000, got %d", cfg.rows)
	case cfg.duration <= 0 || cfg.interval <= 0 || cfg.window <= 0 || cfg.grace <= 0:
		return config{}, errors.New("-duration, -interval, -window and -grace must be positive")
	case cfg.upsertKeys < 0 || cfg.upsertKeys > cfg.rows:
		return config{}, fmt.Errorf("-upsert-keys must be between 0 and -rows (%d), got %d", cfg.rows, cfg.upsertKeys)
	case cfg.deleteEvery < 0 || cfg.deleteEvery == 1 || cfg.deleteRows < 1:
		return config{}, errors.New("-delete-every must be 0 (off) or at least 2, -delete-rows at least 1")
	case cfg.warmup < 0 || cfg.allowance < 0 || cfg.quietTail < 0:
		return config{}, errors.New("-warmup, -allowance and -quiet-tail must not be negative")
	case cfg.writerConcurrency < 1 || cfg.scanEvery < 1 || cfg.scanTables < 1:
		return config{}, errors.New("-writer-concurrency, -scan-every and -scan-tables must be at least 1")
	case (cfg.maintainer == maintainerReactor || cfg.maintainer == maintainerNone) && cfg.maintainerCmd != "":
		return config{}, fmt.Errorf("-maintainer-cmd needs a -maintainer name of its own, not %q", cfg.maintainer)
	case cfg.maintainer != maintainerReactor && cfg.maintainer != maintainerNone && cfg.maintainerCmd == "":
		return config{}, fmt.Errorf("-maintainer %q needs -maintainer-cmd (or use reactor or none)", cfg.maintainer)
	case cfg.maintainer == "" || strings.ContainsAny(cfg.maintainer, "/ \t"):
		return config{}, fmt.Errorf("-maintainer %q: a name without spaces or slashes", cfg.maintainer)
	}
	if cfg.out == "" {
		dir, err := os.MkdirTemp("", "soak-"+time.Now().Format("20060102-150405")+"-")
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
	if _, err := loadThresholds(cfg.thresholdsFile, cfg.sets); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// loadThresholds reads the thresholds file (or the built-in defaults) and
// lays the -set values over its defaults. reactor's process and the soak
// both call it with the same arguments, so they agree on every bound.
func loadThresholds(file string, sets []string) (*thresholds.Config, error) {
	cfg := thresholds.Default()
	if file != "" {
		var err error
		if cfg, err = thresholds.Load(file); err != nil {
			return nil, fmt.Errorf("-thresholds: %w", err)
		}
	}
	if len(sets) > 0 {
		m := map[string]string{}
		setflag.Flag(sets).Apply(m)
		over, err := thresholds.Parse([]byte("defaults:\n" + setflag.DefaultsYAML(m)))
		if err != nil {
			return nil, fmt.Errorf("-set: %w", err)
		}
		overlay(&cfg.Defaults, over.Defaults)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	if !cfg.Watches(namespace) {
		return nil, fmt.Errorf("thresholds: the file watches namespaces %v; the soak's tables are in %q", cfg.Namespaces, namespace)
	}
	return cfg, nil
}

// overlay copies every field set in src (a non-nil pointer) onto dst.
func overlay(dst *thresholds.Policy, src thresholds.Policy) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range s.NumField() {
		if f := s.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			d.Field(i).Set(f)
		}
	}
}
