package worker

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Shutdown during a compaction that is fighting a busy writer: with no
// grace the job is abandoned cleanly (never reported as committed unless
// its commit is in the table: a commit the catalog had already taken when
// the shutdown came stands) and the table holds every row written exactly
// once.
func TestShutdownDuringCompactionLeavesTableConsistent(t *testing.T) {
	// No quiet period: the job starts while the writer hammers the
	// partition, and keeps losing commit races for a while.
	h := newHarness(t, strings.Replace(testThresholds, "quiet_period: 100ms", "quiet_period: 0s", 1), nil)
	w := h.start()
	for range 4 {
		h.commit("a", 10)
	}
	// A writer appending to the same partition as fast as it can.
	ctx, stop := context.WithCancel(h.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := h.writer.Commit(ctx, "a", 3); err != nil && ctx.Err() == nil {
				t.Errorf("writer: %v", err)
				return
			}
		}
	}()
	// A compaction in flight: scheduled more often than finished (the
	// commit path is quick enough that the first may already be done).
	h.eventually("a compaction job running", func() bool {
		finished := 0.0
		for _, outcome := range []string{"succeeded", "noop", "gave_up", "failed"} {
			finished += testutil.ToFloat64(w.Metrics.Jobs.WithLabelValues("compact", outcome))
		}
		return testutil.ToFloat64(w.Metrics.JobsScheduled.WithLabelValues("compact")) > finished
	})
	finished := w.Shutdown(0)
	stop()
	wg.Wait()

	st := w.Pool.Stats()
	// Earlier jobs may have succeeded; the claim checked is the last one's.
	if id := st.Last.CommittedSnapshotID; id != 0 && h.load().Metadata().SnapshotByID(id) == nil {
		t.Errorf("an abandoned job reported a commit the table does not hold: %+v", st)
	}
	c := h.contents()
	if c.Total != h.writer.Written() {
		t.Errorf("table %v, written %v", c.Total, h.writer.Written())
	}
	for id, n := range c.IDs {
		if n != 1 {
			t.Errorf("id %d present %d times", id, n)
		}
	}
	t.Logf("finished within grace: %v; pool %+v", finished, st)
}
