package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobs"
)

const (
	faultKill = "SIGKILL"
	faultTerm = "SIGTERM"
	faultStop = "SIGSTOP"
	faultNATS = "NATS restart"
	// faultReplace: SIGSTOP, a new process under the same name (as a
	// StatefulSet's pod force-deleted from an unreachable node comes back
	// beside the old one), SIGCONT of the old one, which must find itself
	// superseded; it is killed a little later.
	faultReplace = "SIGSTOP+replaced"
)

// faults runs the seeded schedule until the deadline: a bag of the four
// kinds, shuffled, refilled when empty, so each kind comes as often; one
// fault at a time, each undone (restart, SIGCONT) before the next.
func (r *rig) faults(ctx context.Context, rng *rand.Rand, until time.Time) error {
	var bag []string
	for time.Now().Before(until) && ctx.Err() == nil {
		if len(bag) == 0 {
			bag = []string{faultKill, faultTerm, faultStop, faultNATS, faultReplace}
			rng.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
		}
		kind := bag[0]
		bag = bag[1:]
		victim := r.reps[rng.IntN(len(r.reps))]
		if kind != faultNATS {
			victim = r.busyReplica(ctx, victim)
		}
		pause := time.Duration(rng.IntN(1000)) * time.Millisecond
		r.t.Logf("%s %s", time.Now().Format(time.StampMilli), kind+" "+map[bool]string{true: victim.name}[kind != faultNATS])
		switch kind {
		case faultKill:
			victim.proc.Kill()
			victim.exits = append(victim.exits, time.Now())
			time.Sleep(pause)
			if err := r.startReplica(ctx, victim); err != nil {
				return err
			}
		case faultTerm:
			if err := victim.proc.Stop(5 * time.Second); err != nil {
				r.t.Logf("%s's shutdown: %v", victim.name, err)
			}
			victim.exits = append(victim.exits, time.Now())
			time.Sleep(pause)
			if err := r.startReplica(ctx, victim); err != nil {
				return err
			}
		case faultStop:
			f := stopFault{victim: victim.name, stopped: time.Now()}
			if err := syscall.Kill(victim.proc.Pid(), syscall.SIGSTOP); err != nil {
				return err
			}
			time.Sleep(r.cfg.ttl + 1500*time.Millisecond + pause)
			before, err := r.snapshotIDs(ctx)
			if err != nil {
				_ = syscall.Kill(victim.proc.Pid(), syscall.SIGCONT)
				return err
			}
			f.before = before
			f.continued = time.Now()
			if err := syscall.Kill(victim.proc.Pid(), syscall.SIGCONT); err != nil {
				return err
			}
			r.stops = append(r.stops, f)
		case faultReplace:
			old := victim.proc
			f := stopFault{victim: victim.name, stopped: time.Now()}
			if err := syscall.Kill(old.Pid(), syscall.SIGSTOP); err != nil {
				return err
			}
			if err := r.startReplica(ctx, victim); err != nil {
				_ = syscall.Kill(old.Pid(), syscall.SIGCONT)
				old.Kill()
				return err
			}
			time.Sleep(max(0, time.Until(f.stopped.Add(r.cfg.ttl+1500*time.Millisecond+pause))))
			before, err := r.snapshotIDs(ctx)
			if err != nil {
				_ = syscall.Kill(old.Pid(), syscall.SIGCONT)
				old.Kill()
				return err
			}
			f.before, f.continued = before, time.Now()
			if err := syscall.Kill(old.Pid(), syscall.SIGCONT); err != nil {
				return err
			}
			r.stops = append(r.stops, f)
			time.Sleep(2 * time.Second)
			old.Kill()
			r.oldExits = append(r.oldExits, oldExit{victim.name, f.stopped, time.Now()})
		case faultNATS:
			r.nats.Shutdown()
			r.natsRestarts = append(r.natsRestarts, time.Now())
			time.Sleep(300*time.Millisecond + pause)
			if err := r.startNATS(); err != nil {
				return err
			}
		}
		r.count(kind)
		time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
	}
	return nil
}

// busyReplica is a replica running a job, waited for up to two seconds,
// else dflt: a fault that lands mid-job is the one that tests something.
func (r *rig) busyReplica(ctx context.Context, dflt *replica) *replica {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, j := range r.jobs.history().runs {
			rep := r.byName[j.replica]
			if rep == nil || !j.end.IsZero() || time.Since(j.start) > 30*time.Second {
				continue
			}
			if n := len(rep.exits); n > 0 && rep.exits[n-1].After(j.start) {
				continue
			}
			return rep
		}
		time.Sleep(20 * time.Millisecond)
	}
	return dflt
}

// snapshotIDs is every table's snapshots now.
func (r *rig) snapshotIDs(ctx context.Context) (map[string]map[int64]bool, error) {
	out := map[string]map[int64]bool{}
	for _, name := range r.tables {
		tbl, err := r.cat.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		ids := map[int64]bool{}
		for _, s := range tbl.Metadata().Snapshots() {
			ids[s.SnapshotID] = true
		}
		out[name] = ids
	}
	return out, nil
}

// settle waits until no job runs and none has started for a few seconds
// (bounded: what is still running then is reported by the checks).
func (r *rig) settle() {
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		running := 0
		for _, j := range r.jobs.history().runs {
			if _, _, ok := r.interval(j); !ok && !r.natsRestartedAfter(j.start) {
				running++
			}
		}
		if running == 0 && time.Since(r.jobs.last()) > 3*time.Second {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkStaleCommits: no job a replica had started before it was stopped
// committed a snapshot that appeared after its lease had lapsed (it was
// stopped for longer than the TTL, so every snapshot that appeared after
// it was continued did).
func (r *rig) checkStaleCommits(ctx context.Context, h jobHistory) []string {
	var problems []string
	stale := func(jobID, table string, snap int64) {
		j := h.runs[jobID]
		if j == nil {
			r.unattributed++
			return
		}
		if s := r.frozenBy(j); s != nil && !s.before[table][snap] {
			problems = append(problems, fmt.Sprintf("%s: job %s (%s) of %s, started before its SIGSTOP at %s, committed snapshot %d after it was continued at %s, its lease lapsed",
				table, j.id, j.kind, j.replica, s.stopped.Format(time.StampMilli), snap, s.continued.Format(time.StampMilli)))
		}
	}
	for _, name := range r.tables {
		tbl, err := r.cat.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			return append(problems, err.Error())
		}
		for _, s := range tbl.Metadata().Snapshots() {
			if s.Summary != nil {
				if id := s.Summary.Properties[jobs.SnapshotJobProperty]; id != "" {
					stale(id, name, s.SnapshotID)
				}
			}
		}
	}
	for _, j := range h.runs {
		if j.commits > 0 && j.snapshot != 0 {
			stale(j.id, j.table, j.snapshot)
		}
		if r.frozenBy(j) != nil {
			r.frozen = append(r.frozen, fmt.Sprintf("%s %s on %s: %s", j.replica, j.kind, j.table, or(j.outcome, "no end")))
		}
	}
	return problems
}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: real replica processes under faults for ~40 s")
	}
	cfg := loadConfig(t)
	t.Logf("seed %d (replay: REACTOR_CHAOS_SEED=%d), %s of faults, %d replicas, %d tables, lease TTL %s",
		cfg.seed, cfg.seed, cfg.duration, cfg.replicas, cfg.tables, cfg.ttl)
	r := newRig(t, cfg)
	ctx := t.Context()
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	writeErr := make(chan error, 1)
	go func() { writeErr <- r.write(wctx, rand.New(rand.NewPCG(cfg.seed, 1))) }()

	// Let the replicas split the shards and the first jobs run.
	time.Sleep(3 * time.Second)
	started := time.Now()
	if err := r.faults(ctx, rand.New(rand.NewPCG(cfg.seed, 2)), started.Add(cfg.duration)); err != nil {
		t.Fatalf("fault schedule: %v", err)
	}
	chaosTime := time.Since(started)
	time.Sleep(2 * time.Second) // writes after the last fault
	stopWriter()
	if err := <-writeErr; err != nil {
		t.Errorf("writer: %v", err)
	}
	r.settle()

	h := r.jobs.history()
	for _, p := range h.problems {
		t.Error(p)
	}
	overlaps, unknown := r.checkOverlaps(h)
	for _, p := range overlaps {
		t.Error(p)
	}
	for _, p := range r.checkStaleCommits(ctx, h) {
		t.Error(p)
	}
	kinds := map[string]int{}
	failures := map[string]int{} // why jobs failed, cut short: a new reason is worth a look
	succeeded := 0
	for _, j := range h.runs {
		kinds[j.kind]++
		if j.outcome == "succeeded" {
			succeeded++
		}
		if j.err != "" {
			failures[j.err[:min(len(j.err), 110)]]++
		}
	}
	for _, name := range r.tables {
		tbl, err := r.cat.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := readTable(ctx, tbl)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		want := r.writers[name].Written()
		if got != want {
			t.Errorf("%s holds %v, the writer wrote %v", name, got, want)
		}
		t.Logf("%s: %v (%d data, %d position-delete, %d equality-delete files; %d rows deleted by position, %d by equality)",
			name, got, st.data, st.pos, st.eq, st.posDeleted, st.eqDeleted)
	}
	t.Logf("%s of chaos: faults %v; writer %d appends, %d position deletes, %d equality deletes",
		chaosTime.Round(time.Second), faultCounts(r.counts), r.counts["append"], r.counts["position delete"], r.counts["equality delete"])
	t.Logf("jobs: %d started (%v), %d succeeded; %d with an end lost to a NATS restart, %d ends without a start",
		len(h.runs), kinds, succeeded, unknown, h.noStart)
	for why, n := range failures {
		t.Logf("%d job(s) failed: %s", n, why)
	}
	t.Logf("jobs caught running by a SIGSTOP (each must commit nothing once continued): %v; reactor snapshots whose job's start event was lost: %d",
		r.frozen, r.unattributed)
	if t.Failed() {
		for _, rep := range r.reps {
			if data, err := os.ReadFile(r.logPath(rep)); err == nil {
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				t.Logf("last lines of %s:\n%s", rep.name, strings.Join(lines[max(0, len(lines)-25):], "\n"))
			}
		}
	}
}

func faultCounts(c map[string]int) string {
	var parts []string
	for _, k := range []string{faultKill, faultTerm, faultStop, faultReplace, faultNATS} {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
