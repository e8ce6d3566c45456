// Command soak is reactor's soak benchmark: a streaming writer at
// a steady rate against reactor running as reactor run wires it, sampled
// every few seconds for read, write and metadata amplification, commit
// latency, reactor's CPU and its jobs, against the streaming targets
// (docs/design.md#streaming-targets). See
// BENCHMARKS.md for the scenarios and results; `go run ./bench/soak -h` for
// the flags.
//
// It is a benchmark, not part of the reactor binary; it drives reactor only
// through what a deployment has: the catalog, commit events and job events.
//
// # Files
//
//   - main.go: the entry point; config.go the flags and the thresholds laid
//     over the file's defaults (-set).
//   - run.go: one run: the tables and their writers, the maintainer, the
//     sampler, the row checks at the end, the files written to -out.
//   - reactor.go: reactor's own process (worker.Start as `reactor run` wires
//     it); maintainer.go the other maintainers a run may use instead (the peers,
//     each a command in its own process group); rewrites.go the bytes a peer
//     rewrote, read from its snapshots.
//   - sample.go: one sample of every table; csv.go samples.csv and tables.csv,
//     written row by row.
//   - targets.go: the streaming targets, met or missed, and the summary;
//     quiet.go the quiet tail's targets and its careful scans.
//   - deletes.go: the writer's position deletes (-delete-every).
//   - fleet.go: the -fleet preset (many slow tables) and its targets: CPU per
//     commit and per table, the catalog calls by kind from reactor's
//     /metrics.
//   - result.go: result.json, one run's figures for interop/peers' comparison.
//   - plot.go: soak.png, the figure of the samples; png.go writes it in at most
//     256 colours; replot.go draws it again from samples.csv (-replot).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if spec := os.Getenv(reactorEnv); spec != "" {
		os.Exit(runReactor(spec))
	}
	cfg, err := parseConfig(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(2)
	}
	if cfg.replot != "" {
		if err := replot(cfg.replot, cfg.warmup); err != nil {
			fmt.Fprintf(os.Stderr, "soak: replot: %v\n", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(1)
	}
}
