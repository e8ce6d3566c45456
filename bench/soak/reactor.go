package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/icereactor/reactor/embedded"
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
	w, err := worker.Start(ctx, worker.Config{
		DataDir:     spec.DataDir,
		CatalogName: embedded.CatalogName,
		Thresholds:  th,
		Concurrency: concurrency,
		Logger:      log,
		HTTPAddr:    "127.0.0.1:0",
	})
	if err != nil {
		log.Error("soak reactor: start", "error", err)
		return 1
	}
	ready, err := json.Marshal(reactorReady{NATSURL: w.NATS.URL(), HTTPAddr: w.HTTPAddr()})
	if err == nil {
		err = writeFileAtomic(spec.ReadyFile, ready)
	}
	if err != nil {
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

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// reactorProcess is the running reactor, seen from the soak.
type reactorProcess struct {
	cmd   *exec.Cmd
	done  chan struct{}
	err   error // cmd.Wait's, once done is closed
	ready reactorReady
}

// startReactor starts the reactor process and waits until it runs.
func startReactor(ctx context.Context, cfg config, dataDir, logPath string) (*reactorProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start reactor: %w", err)
	}
	readyFile := filepath.Join(dataDir, "reactor.ready")
	spec, err := json.Marshal(reactorSpec{DataDir: dataDir, ThresholdsFile: cfg.thresholdsFile, Sets: cfg.sets,
		LogLevel: cfg.logLevel.String(), ReadyFile: readyFile, Grace: cfg.grace})
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("reactor log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reactorEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start reactor: %w", err)
	}
	p := &reactorProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(readyFile); err == nil {
			if err := json.Unmarshal(data, &p.ready); err != nil {
				p.kill()
				return nil, fmt.Errorf("reactor ready file: %w", err)
			}
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("reactor exited before it was ready (%v); see %s", p.err, logPath)
		case <-deadline.C:
			p.kill()
			return nil, fmt.Errorf("reactor not ready after 2 minutes; see %s", logPath)
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// Pid is the reactor process's id.
func (p *reactorProcess) Pid() int { return p.cmd.Process.Pid }

// Stop asks reactor to shut down (SIGTERM: running jobs get the grace
// period) and waits for it; after grace plus a margin it is killed.
func (p *reactorProcess) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return fmt.Errorf("reactor had already exited: %v", p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop reactor: %w", err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace + 15*time.Second):
		p.kill()
		return errors.New("reactor did not stop within its grace period; killed")
	}
}

func (p *reactorProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}
