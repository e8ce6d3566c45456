package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/icereactor/reactor/bench/selfexec"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/worker"
)

// childEnv carries a replica's settings. Its presence makes this binary
// (or the test binary, through TestMain) run one reactor replica instead
// of the benchmark: each replica is a process of its own, so its CPU time
// is its own and SIGKILL kills it as it kills a deployed one.
const childEnv = "REACTOR_BENCH_REPLICA"

// childSpec is what a replica process is told.
type childSpec struct {
	NATSURL        string        `json:"nats_url"`
	DataDir        string        `json:"data_dir"` // holds the shared SQLite catalog
	ThresholdsFile string        `json:"thresholds_file"`
	Replica        string        `json:"replica"`
	LeaseTTL       time.Duration `json:"lease_ttl"`
	LeaseShards    int           `json:"lease_shards"`
	Concurrency    int           `json:"concurrency"`
	LogLevel       string        `json:"log_level"`
	ReadyFile      string        `json:"ready_file"`
	Grace          time.Duration `json:"grace"`
}

// childReady is what a replica answers once it runs.
type childReady struct {
	HTTPAddr string `json:"http_addr"`
}

// runChild is one replica: worker.Start as `reactor run --replica` calls
// it, on the benchmark's NATS and catalog, until SIGTERM.
func runChild(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "replica: bad %s: %v\n", childEnv, err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(spec.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("replica", spec.Replica)
	th, err := thresholds.Load(spec.ThresholdsFile)
	if err != nil {
		log.Error("replica: thresholds", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	w, err := worker.Start(ctx, worker.Config{
		NATSURL:     spec.NATSURL,
		DataDir:     spec.DataDir,
		Thresholds:  th,
		Concurrency: spec.Concurrency,
		Logger:      log,
		HTTPAddr:    "127.0.0.1:0",
		Leases:      worker.LeaseConfig{Replica: spec.Replica, TTL: spec.LeaseTTL, Shards: spec.LeaseShards},
	})
	if err != nil {
		log.Error("replica: start", "error", err)
		return 1
	}
	if err := selfexec.WriteReady(spec.ReadyFile, childReady{HTTPAddr: w.HTTPAddr()}); err != nil {
		log.Error("replica: ready file", "error", err)
		w.Close()
		return 1
	}
	log.Info("replica running", "concurrency", spec.Concurrency, "lease_ttl", spec.LeaseTTL)
	<-ctx.Done()
	finished := w.Shutdown(spec.Grace)
	log.Info("replica stopped", "jobs_finished_in_grace", finished)
	return 0
}

// child is a running replica process, seen from the benchmark.
type child struct {
	*selfexec.Process
	name  string
	ready childReady
}

// startChild starts a replica process and waits until it runs.
func startChild(ctx context.Context, spec childSpec, logPath string) (*child, error) {
	c := &child{name: spec.Replica}
	p, err := selfexec.Start(ctx, "replica "+spec.Replica, childEnv, spec, spec.ReadyFile, logPath, &c.ready)
	if err != nil {
		return nil, err
	}
	c.Process = p
	return c, nil
}

// readyFile is where replica name of a phase announces itself.
func readyFile(dir, name string) string { return filepath.Join(dir, name+".ready") }
