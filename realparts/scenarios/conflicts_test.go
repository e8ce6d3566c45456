package scenarios

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/streamwriter"
)

// Scenario 3. Conflicts through the REST catalog: a writer commits every
// 50 ms to the partition reactor compacts (max_quiet_wait makes reactor
// compact it while it is being written). The catalog answers every stale
// commit with HTTP 409 CommitFailedException, which must reach both sides
// as a conflict: the writer retries, reactor's job commits or gives up
// cleanly (never fails) and deletes what its lost attempts wrote. Once the
// writer stops, the partition is compacted. No row is lost or duplicated,
// and no data file is left unreferenced beyond the writer's own retries.
func TestConflictsThroughRESTCatalog(t *testing.T) {
	s := need(t)
	s.resetStreams(t)
	l := s.openLake(t, "s3", "busy")
	l.createTable(nil)
	jobs := s.watchJobs(t, l.name)
	r := s.newReactor(t, scenarioThresholds("s3", "  max_quiet_wait: 2s\n  commit_retry_time: 10s\n"))
	r.start()
	diag := func() string { return jobs.summary() + r.p.tail(40) }
	conflictsBefore := strings.Count(readFile(s.rest.logPath), "CommitFailedException")
	restConflicts := func() int { return strings.Count(readFile(s.rest.logPath), "CommitFailedException") - conflictsBefore }

	w := streamwriter.New(l.cat, l.ident, nil)
	ctx, stop := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		gaveUp  []error
		commits int
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// A commit under way when the test stops the writer finishes on
			// its own context: cancelling it would leave its fate unknown.
			_, err := w.Commit(context.WithoutCancel(ctx), "hot", 10)
			mu.Lock()
			if err != nil {
				gaveUp = append(gaveUp, err)
			} else {
				commits++
			}
			mu.Unlock()
		}
	}()
	// The writer runs until a compaction has ended beside it (committed or
	// given up) after the catalog refused stale commits; the limit is a
	// hang guard.
	deadline := time.Now().Add(3 * time.Minute)
	for (len(jobs.finished("compact")) == 0 || restConflicts() == 0) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	wg.Wait()
	besideWriter := jobs.summary()

	// Quiet now: the partition must get compacted.
	eventually(t, "a compaction committed once the writer stopped", 3*time.Minute, func() bool {
		return jobs.succeeded("compact") >= 1
	}, diag)
	eventually(t, "every scheduled job finished", 2*time.Minute, func() bool {
		n := 0
		for _, k := range []string{"compact", "rewrite_manifests", "expire_snapshots", "remove_orphans"} {
			n += len(jobs.scheduled(k))
		}
		return len(jobs.finished("")) >= n
	}, diag)

	_, writerConflicts := w.Stats()
	reactorConflicts := r.metric("reactor_commit_conflicts_total", map[string]string{"table": l.name})
	t.Logf("writer: %d commits, %d conflicts retried, %d gave up; reactor: %v conflicts; REST catalog: %d commits refused with 409 CommitFailedException\njobs beside the writer:\n%sall jobs:\n%s",
		commits, writerConflicts, len(gaveUp), reactorConflicts, restConflicts(), besideWriter, jobs.summary())
	if restConflicts() == 0 {
		t.Errorf("the REST catalog refused no commit: the scenario produced no conflict (%d writer commits)", commits)
	}
	if reactorConflicts == 0 && writerConflicts == 0 && restConflicts() > 0 {
		t.Errorf("the catalog refused %d commits, but neither side counted a conflict", restConflicts())
	}
	for _, err := range gaveUp {
		// Giving up is allowed; a conflict is the only clean reason.
		if !strings.Contains(err.Error(), "CommitFailed") {
			t.Errorf("writer commit failed for another reason than a conflict: %v", err)
		}
	}
	l.checkRows(w.Written())
	l.checkReferencedExist()
	// A conflict the writer retries leaves its attempt's data file (one
	// partition, one file): a streaming writer's leftovers are orphan
	// cleanup's business. Anything beyond them a lost reactor attempt left.
	// The writer's own count misses the 409s iceberg-go replays inside
	// Append, so its share is also taken from the catalog: every refusal
	// reactor did not count was the writer's.
	writerShare := max(writerConflicts, restConflicts()-int(reactorConflicts))
	if left := l.unreferencedData(); len(left) > writerShare {
		t.Errorf("%d data files are referenced by no snapshot, the writer's %d retried conflicts (%d counted by the writer, %d refusals by the catalog not reactor's) account for %d: reactor left the rest: %v",
			len(left), writerShare, writerConflicts, restConflicts()-int(reactorConflicts), writerShare, left[:min(len(left), 20)])
	}
	if f := jobs.failures(); len(f) > 0 {
		t.Errorf("jobs failed (a conflict must be retried or given up, never a failure):\n%s", jobs.summary())
	}
	r.stop()
}
