package chaos

// The replicas: this test binary run again in a child mode (TestMain),
// one reactor worker each, as `reactor run --replica NAME` runs one.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/icereactor/reactor/bench/selfexec"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/worker"
)

const childEnv = "REACTOR_CHAOS_REPLICA"

func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(childEnv); ok {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

type childSpec struct {
	NATSURL    string        `json:"nats_url"`
	DataDir    string        `json:"data_dir"` // holds the shared SQLite catalog
	Thresholds string        `json:"thresholds"`
	Replica    string        `json:"replica"`
	LeaseTTL   time.Duration `json:"lease_ttl"`
	ReadyFile  string        `json:"ready_file"`
	Grace      time.Duration `json:"grace"`
}

type childReady struct {
	Pid int `json:"pid"`
}

const leaseShards = 16

// runChild is one replica until SIGTERM.
func runChild(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "replica: bad %s: %v\n", childEnv, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("replica", spec.Replica)
	th, err := thresholds.Parse([]byte(spec.Thresholds))
	if err != nil {
		log.Error("replica: thresholds", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	w, err := worker.Start(ctx, worker.Config{
		NATSURL:     spec.NATSURL,
		DataDir:     spec.DataDir,
		Thresholds:  th,
		Concurrency: 2,
		Logger:      log,
		Leases:      worker.LeaseConfig{Replica: spec.Replica, TTL: spec.LeaseTTL, Shards: leaseShards},
	})
	if err != nil {
		log.Error("replica: start", "error", err)
		return 1
	}
	if err := selfexec.WriteReady(spec.ReadyFile, childReady{Pid: os.Getpid()}); err != nil {
		log.Error("replica: ready file", "error", err)
		w.Close()
		return 1
	}
	<-ctx.Done()
	log.Info("replica stopping", "jobs_finished_in_grace", w.Shutdown(spec.Grace))
	return 0
}

// replica is one stable name and its current process.
type replica struct {
	name  string
	gen   int
	proc  *selfexec.Process
	exits []time.Time // when each of its processes ended (killed or shut down)
}

func (r *rig) startReplica(ctx context.Context, rep *replica) error {
	rep.gen++
	spec := childSpec{
		NATSURL: r.natsURL, DataDir: r.dataDir, Thresholds: chaosThresholds, Replica: rep.name,
		LeaseTTL: r.cfg.ttl, Grace: 5 * time.Second,
		ReadyFile: filepath.Join(r.dir, fmt.Sprintf("%s-%d.ready", rep.name, rep.gen)),
	}
	var ready childReady
	p, err := selfexec.Start(ctx, "replica "+rep.name, childEnv, spec, spec.ReadyFile, r.logPath(rep), &ready)
	if err != nil {
		return err
	}
	rep.proc = p
	return nil
}

func (r *rig) logPath(rep *replica) string { return filepath.Join(r.dir, rep.name+".log") }

// chaosThresholds make every kind of job come often on small tables.
const chaosThresholds = `
defaults:
  target_file_size: 1MiB
  small_file_count: 4
  min_input_files: 4
  quiet_period: 100ms
  max_quiet_wait: 1s
  cooldown: 300ms
  conflict_cooldown: 1s
  commit_retry_time: 20s
  delete_min_input_files: 2
  delete_file_ratio: 0.2
  deleted_row_ratio: 0.1
  delete_file_threshold: 2
  manifest_count: 8
  snapshot_count: 100000
`
