package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/lease"
)

// leaseNoExpiry: a lease that would take an hour to expire, so a test
// that passes with it did not wait for one (each wait is bounded at a
// minute).
const leaseNoExpiry = time.Hour

// A single replica killed mid-stream (its leases left behind, as SIGKILL
// leaves them) and restarted under its name compacts again without
// waiting for its own dead incarnation's leases, and keeps every row.
func TestKilledReplicaRestartsAndCompactsAtOnce(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	jobs := h.recordJobs()
	h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{Replica: "pod-0", TTL: leaseNoExpiry, Shards: 16} }
	first := h.start()
	for range 6 {
		h.commit("a", 20)
	}
	h.eventually("the first compaction", func() bool { return jobs.succeeded("db.events", jobkind.Compact) >= 1 })
	first.kill()

	// Commits while reactor is down, and after it is back.
	for range 6 {
		h.commit("a", 20)
	}
	again := h.start()
	if err := again.Leases().Refused(); err != nil {
		t.Fatalf("the restarted replica refuses its tables: %v", err)
	}
	h.eventually("the restarted replica owns the table", func() bool { return again.Leases().Owns("db.events") })
	for range 2 {
		h.commit("a", 20)
	}
	h.eventually("a compaction after the restart", func() bool { return jobs.succeeded("db.events", jobkind.Compact) >= 2 })
	jobs.checkNoJobRanTwice(t)
	if got, want := h.contents().Total, h.writer.Written(); got != want {
		t.Errorf("table holds %v, writer wrote %v", got, want)
	}
}

// A second process started by mistake under a name a live one holds
// takes no table and says why in its readiness and its log; the first
// keeps everything.
func TestDuplicateReplicaNameIsNotReady(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{Replica: "pod-0", TTL: leaseNoExpiry, Shards: 16} }
	first := h.start()
	dup := h.start()
	if err := first.Ready(h.ctx); err != nil {
		t.Fatalf("the first is not ready: %v", err)
	}
	err := dup.Ready(h.ctx)
	if !errors.Is(err, lease.ErrNameInUse) {
		t.Fatalf("the duplicate is ready, or not for its name: %v", err)
	}
	t.Log(err)
	if n := dup.Leases().HeldCount(); n != 0 || first.Leases().HeldCount() != 16 {
		t.Fatalf("the duplicate holds %d shards, the first %d", n, first.Leases().HeldCount())
	}
	if !strings.Contains(h.logs.String(), "its replica name is in use") {
		t.Error("the refusal is not logged")
	}
}

// A replica shut down by SIGTERM hands its tables over on the spot: the
// survivor owns them and compacts them although their leases would take
// an hour to expire.
func TestShutdownHandsTablesOverAtOnce(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	jobs := h.recordJobs()
	h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{TTL: leaseNoExpiry, Shards: 16} }
	a, b := h.startReplicas(leaseNoExpiry)
	writers, owner := h.replicaTables(a, b)
	var moved []string
	for name, w := range owner {
		if w == a {
			moved = append(moved, name)
		}
	}
	if !a.Shutdown(10 * time.Second) {
		t.Fatal("a's jobs did not end within the grace period")
	}
	h.eventually("b owns every shard", func() bool { return b.Leases().HeldCount() == 16 })
	for _, name := range moved {
		if err := b.Leases().MayRun(name); err != nil {
			t.Fatalf("a released table waits on the survivor: %v", err)
		}
		for range 6 {
			if _, err := writers[name].Commit(context.Background(), "a", 5); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range moved {
		h.eventually("a compaction of "+name+" on the survivor", func() bool {
			return jobs.succeeded(name, jobkind.Compact) >= 1
		})
	}
	jobs.checkNoJobRanTwice(t)
}
