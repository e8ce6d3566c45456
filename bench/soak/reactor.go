package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/icereactor/reactor/bench/selfexec"
	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/worker"
)

// reactorEnv carries the reactor process's settings. Its presence makes
// this binary (or the test binary, through TestMain) run reactor instead of
// the soak: reactor runs in a process of its own so that its CPU time is
// its own, and it shares the catalog with the writer as a deployed reactor
// would.
const reactorEnv = "REACTOR_SOAK_REACTOR"

// reactorSpec is what the reactor process is told.
type reactorSpec struct {
	DataDir        string        `json:"data_dir"`
	ThresholdsFile string        `json:"thresholds_file"`
	Sets           []string      `json:"sets"`
	LogLevel       string        `json:"log_level"`
	ReadyFile      string        `json:"ready_file"`
	Grace          time.Duration `json:"grace"`
	CPUProfile     string        `json:"cpu_profile,omitempty"`
	// MetadataCacheBytes is catalogs.Config's (0: no cache, reactor's
	// default).
	MetadataCacheBytes int64 `json:"metadata_cache_bytes,omitempty"`
}

// reactorReady is what it answers once it runs.
type reactorReady struct {
	NATSURL  string `json:"nats_url"`
	HTTPAddr string `json:"http_addr"`
}

// runReactor is the reactor process: worker.Start as reactor run calls it
// (embedded NATS and SQLite catalog under the data directory, JSON logs on
// stderr, concurrency from the thresholds file else 2), until SIGTERM.
func runReactor(specJSON string) int {
	var spec reactorSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "soak reactor: bad %s: %v\n", reactorEnv, err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(spec.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	th, err := loadThresholds(spec.ThresholdsFile, spec.Sets)
	if err != nil {
		log.Error("soak reactor: thresholds", "error", err)
		return 2
	}
	concurrency := thresholds.DefaultConcurrency
	if th.Concurrency != nil {
		concurrency = *th.Concurrency
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if spec.CPUProfile != "" {
		f, err := os.Create(spec.CPUProfile)
		if err != nil {
			log.Error("soak reactor: cpu profile", "error", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Error("soak reactor: cpu profile", "error", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	w, err := worker.Start(ctx, worker.Config{
		DataDir:     spec.DataDir,
		Thresholds:  th,
		Concurrency: concurrency,
		Logger:      log,
		HTTPAddr:    "127.0.0.1:0",
		Catalog:     catalogs.Config{MetadataCacheBytes: spec.MetadataCacheBytes},
	})
	if err != nil {
		log.Error("soak reactor: start", "error", err)
		return 1
	}
	if err := selfexec.WriteReady(spec.ReadyFile, reactorReady{NATSURL: w.NATS.URL(), HTTPAddr: w.HTTPAddr()}); err != nil {
		log.Error("soak reactor: ready file", "error", err)
		w.Close()
		return 1
	}
	log.Info("reactor running", "nats_url", w.NATS.URL(), "concurrency", concurrency)
	<-ctx.Done()
	finished := w.Shutdown(spec.Grace)
	log.Info("reactor stopped", "jobs_finished_in_grace", finished)
	return 0
}

// reactorProcess is the running reactor, seen from the soak.
type reactorProcess struct {
	*selfexec.Process
	ready reactorReady
}

// startReactor starts the reactor process and waits until it runs.
func startReactor(ctx context.Context, cfg config, dataDir, logPath string) (*reactorProcess, error) {
	readyFile := filepath.Join(dataDir, "reactor.ready")
	spec := reactorSpec{DataDir: dataDir, ThresholdsFile: cfg.thresholdsFile, Sets: cfg.sets,
		LogLevel: cfg.logLevel.String(), ReadyFile: readyFile, Grace: cfg.grace, CPUProfile: cfg.cpuProfile,
		MetadataCacheBytes: cfg.metadataCacheBytes}
	rx := &reactorProcess{}
	p, err := selfexec.Start(ctx, "reactor", reactorEnv, spec, readyFile, logPath, &rx.ready)
	if err != nil {
		return nil, err
	}
	rx.Process = p
	return rx, nil
}
