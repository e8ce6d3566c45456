// Command replicas is reactor's replica benchmark: 1, 2 and 3
// reactor replicas, each a process of its own with its own --replica
// name, on one NATS server and one SQLite catalog, over many tables under
// a steady writer load. From the job events (which name the replica) it
// counts jobs per replica, jobs that ran twice or beside another job of
// their table in another replica, jobs failed from replica races, and
// total jobs/s and CPU per replica. Then it SIGKILLs one replica while it
// runs a job and measures when its shards are owned again (the lease
// bucket itself), that the survivors run its tables' jobs, what the
// killed job left on disk, and that every table's rows and checksum are
// exact. See BENCHMARKS.md section 15; `go run ./bench/replicas -h`.
//
// It is a benchmark, not part of the reactor binary; it drives reactor
// only through what a deployment has: NATS, the catalog, commit events,
// job events and the lease bucket.
//
// # Files
//
//   - main.go: the entry point; config.go the flags and the replicas'
//     thresholds file.
//   - run.go: the phases: servers, tables, replicas, writers, the window, the
//     row checks.
//   - child.go: a replica process (worker.Start as `reactor run --replica`
//     calls it) and the parent's view of it (package bench/selfexec).
//   - jobs.go: the job events of every replica, and what a phase's jobs show
//     (twice run, overlapping, failed from races).
//   - leases.go: the lease bucket watched directly: who holds each shard, and
//     when it changed hands.
//   - kill.go: the SIGKILL of a replica mid-job, the takeover, what the killed
//     job left and its cleanup; files.go the data files no snapshot names.
//   - report.go: the phases' and the kill's reports.
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
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	cfg, err := parseConfig(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "replicas: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "replicas: %v\n", err)
		os.Exit(1)
	}
}
