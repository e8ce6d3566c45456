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
