// Command compact is reactor's compaction throughput benchmark:
// one partition of small zstd Parquet files rewritten into target-sized
// files by reactor's compaction job and, in the same run, by the limit — a
// plain arrow-go pqarrow program that reads the same files and writes them
// with iceberg-go's writer settings through one writer, with no Iceberg
// metadata. Each is a child process of this command, timed in rotating
// order on the same warm files, so wall time, CPU time (getrusage), peak
// RSS and the bytes the Go heap allocated compare as ratios.
//
//	go run ./bench/compact -sizes 200MB,1GB -runs 3
//
// Inputs are generated under -work (default a directory in the system
// temporary directory) and deleted at the end unless -keep. See
// BENCHMARKS.md for the results and `go run ./bench/compact -h` for the
// flags. It is a benchmark, not part of the reactor binary.
//
// # Files
//
//   - main.go: the flags, and the child roles a run starts (roleArgs,
//     childReport).
//   - generate.go: the input: one partition of 10,000-row zstd Parquet files of
//     12 columns, generated under -work.
//   - measure.go: the rounds: each contender a child process, timed with
//     getrusage in rotating order, the table restored between runs; the medians
//     and the ratios against the limit.
//   - job.go: the reactor role: the compaction (or, with -sort-order, the sort)
//     through executor.Run.
//   - limit.go: the limit role: pqarrow reads the files and one writer with
//     iceberg-go's settings writes them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/thresholds"
)

// roleEnv names the role a child process plays; its arguments (roleArgs)
// come on its stdin as JSON.
const roleEnv = "REACTOR_BENCH_COMPACT_ROLE"

// roleArgs are a child's instructions.
type roleArgs struct {
	Dir         string   `json:"dir"`
	Inputs      []string `json:"inputs,omitempty"`
	OutDir      string   `json:"out_dir,omitempty"`
	Target      int64    `json:"target"`
	SortOrder   string   `json:"sort_order,omitempty"`
	Concurrency int      `json:"concurrency,omitempty"`
	SortMemory  int64    `json:"sort_memory,omitempty"`
	SpillDir    string   `json:"spill_dir,omitempty"`
}

// childReport is what a child prints on stdout: its result and what its
// Go heap allocated.
type childReport struct {
	Limit      *limitResult `json:"limit,omitempty"`
	Job        *jobResult   `json:"job,omitempty"`
	AllocBytes uint64       `json:"alloc_bytes"`
	GCCycles   uint64       `json:"gc_cycles"`
}

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(child(role))
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "compact bench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "compact bench: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	work        string
	sizes       []int64
	runs        int
	target      int64
	concurrency []int
	sortOrder   string
	sortMemory  int64
	keep        bool
	jsonOut     string
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	work := fs.String("work", "", "directory for the generated tables and outputs (default: a new directory under $TMPDIR)")
	sizes := fs.String("sizes", "200MB,1GB", "comma-separated Parquet input sizes, one partition each")
	runs := fs.Int("runs", 3, "runs of each contender, interleaved")
	target := fs.String("target", "128MiB", "target file size of both rewrites")
	conc := fs.String("concurrency", "1,2", "comma-separated reactor data-path concurrencies to run")
	sortOrder := fs.String("sort-order", "", "also run a sort job in this order (e.g. payload), beside the bin-pack")
	sortMemory := fs.String("sort-memory", "", "the sort job's memory budget (sort_memory); empty: the default")
	keep := fs.Bool("keep", false, "keep the generated inputs")
	jsonOut := fs.String("json", "", "also write every run as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg := config{work: *work, runs: *runs, sortOrder: *sortOrder, keep: *keep, jsonOut: *jsonOut}
	for _, s := range splitList(*sizes) {
		n, err := thresholds.ParseSize(s)
		if err != nil {
			return config{}, fmt.Errorf("-sizes: %w", err)
		}
		cfg.sizes = append(cfg.sizes, int64(n))
	}
	t, err := thresholds.ParseSize(*target)
	if err != nil {
		return config{}, fmt.Errorf("-target: %w", err)
	}
	cfg.target = int64(t)
	for _, s := range splitList(*conc) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return config{}, fmt.Errorf("-concurrency: %q is not a positive number", s)
		}
		cfg.concurrency = append(cfg.concurrency, n)
	}
	if *sortMemory != "" {
		m, err := thresholds.ParseSize(*sortMemory)
		if err != nil {
			return config{}, fmt.Errorf("-sort-memory: %w", err)
		}
		cfg.sortMemory = int64(m)
	}
	if cfg.runs < 1 || len(cfg.sizes) == 0 {
		return config{}, errors.New("need at least one run and one size")
	}
	return cfg, nil
}

// child plays role and prints its childReport as JSON.
func child(role string) int {
	var args roleArgs
	if err := json.NewDecoder(os.Stdin).Decode(&args); err != nil {
		fmt.Fprintf(os.Stderr, "bad arguments on stdin: %v\n", err)
		return 2
	}
	ctx := context.Background()
	if path := os.Getenv("REACTOR_BENCH_COMPACT_CPUPROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%s.%d", path, role, os.Getpid()))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if path := os.Getenv("REACTOR_BENCH_COMPACT_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if f, err := os.Create(fmt.Sprintf("%s.%s.%d", path, role, os.Getpid())); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	var rep childReport
	switch role {
	case "limit":
		res, err := rewriteLimit(ctx, args.Inputs, args.OutDir, args.Target)
		if err != nil {
			fmt.Fprintf(os.Stderr, "limit: %v\n", err)
			return 1
		}
		rep.Limit = &res
	case "reactor":
		res, err := runJob(ctx, args.Dir, args.Target, args.SortOrder, executor.Options{
			Concurrency: args.Concurrency, SortMemory: args.SortMemory, SpillDir: args.SpillDir})
		if err != nil {
			fmt.Fprintf(os.Stderr, "reactor: %v\n", err)
			return 1
		}
		rep.Job = &res
	default:
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		return 2
	}
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(samples)
	rep.AllocBytes = samples[0].Value.Uint64()
	rep.GCCycles = samples[1].Value.Uint64()
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 1
	}
	return 0 // the deferred profiles are written before the exit
}

// since is a duration rounded for progress lines.
func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
