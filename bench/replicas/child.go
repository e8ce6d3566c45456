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
		CatalogName: embedded.CatalogName,
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
	ready, err := json.Marshal(childReady{HTTPAddr: w.HTTPAddr()})
	if err == nil {
		err = writeFileAtomic(spec.ReadyFile, ready)
	}
	if err != nil {
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

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// child is a running replica process, seen from the benchmark.
type child struct {
	name  string
	cmd   *exec.Cmd
	done  chan struct{}
	err   error // cmd.Wait's, once done is closed
	ready childReady
	log   string
}

// startChild starts a replica process and waits until it runs.
func startChild(ctx context.Context, spec childSpec, logPath string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start replica %s: %w", spec.Replica, err)
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("replica log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(specJSON))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start replica %s: %w", spec.Replica, err)
	}
	c := &child{name: spec.Replica, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(spec.ReadyFile); err == nil {
			if err := json.Unmarshal(data, &c.ready); err != nil {
				c.kill()
				return nil, fmt.Errorf("replica %s ready file: %w", spec.Replica, err)
			}
			return c, nil
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("replica %s exited before it was ready (%v); see %s", spec.Replica, c.err, logPath)
		case <-deadline.C:
			c.kill()
			return nil, fmt.Errorf("replica %s not ready after 2 minutes; see %s", spec.Replica, logPath)
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop asks the replica to shut down (SIGTERM: running jobs get the grace
// period, then it releases its leases) and waits; after grace plus a
// margin it is killed.
func (c *child) stop(grace time.Duration) error {
	if c.exited() {
		return fmt.Errorf("replica %s had already exited: %v", c.name, c.err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop replica %s: %w", c.name, err)
	}
	select {
	case <-c.done:
		return c.err
	case <-time.After(grace + 15*time.Second):
		c.kill()
		return fmt.Errorf("replica %s did not stop within its grace period; killed", c.name)
	}
}

// kill is SIGKILL: no shutdown, no lease released, jobs cut off mid-way.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// readyFile is where replica name of a phase announces itself.
func readyFile(dir, name string) string { return filepath.Join(dir, name+".ready") }
