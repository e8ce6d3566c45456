package executor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobs"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// busyWriter commits small batches to one partition every interval (0: as
// fast as it can) until stopped.
type busyWriter struct {
	stop    context.CancelFunc
	done    sync.WaitGroup
	mu      sync.Mutex
	commits int
	err     error
}

func startBusyWriter(f *fixture, category string, interval time.Duration) *busyWriter {
	ctx, cancel := context.WithCancel(f.ctx)
	bw := &busyWriter{stop: cancel}
	bw.done.Add(1)
	go func() {
		defer bw.done.Done()
		for ctx.Err() == nil {
			if _, err := f.writer.Commit(ctx, category, 5); err != nil {
				if ctx.Err() == nil {
					bw.mu.Lock()
					bw.err = err
					bw.mu.Unlock()
				}
				return
			}
			bw.mu.Lock()
			bw.commits++
			bw.mu.Unlock()
			if interval > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(interval):
				}
			}
		}
	}()
	return bw
}

func (bw *busyWriter) halt(t testing.TB) int {
	t.Helper()
	bw.stop()
	bw.done.Wait()
	if bw.err != nil {
		t.Fatalf("writer: %v", bw.err)
	}
	return bw.commits
}

// A writer keeps appending to the partition while reactor compacts it. The
// compaction commits or gives up cleanly; either way every row written is
// present exactly once, and every conflict is counted.
func TestCompactionUnderBusyWriterKeepsEveryRowOnce(t *testing.T) {
	for _, interval := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(interval.String(), func(t *testing.T) {
			f := newFixture(t, nil)
			for range 8 {
				f.commit("a", 10)
			}
			bw := startBusyWriter(f, "a", interval)
			res, rep := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5, commit_retry_time: "+budget(interval)+"}", "a"))
			commits := bw.halt(t)
			t.Logf("writer every %v: %d writer commits during the job; outcome %v after %d attempts (%d conflicts)",
				interval, commits, res.Outcome, rep.Attempts, rep.Conflicts)

			if res.Outcome != jobs.Succeeded && res.Outcome != jobs.GaveUp {
				t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
			}
			// Whether it commits against a paced writer depends on how fast
			// this machine commits (under -race on two loaded cores it may
			// not): that is a performance figure, measured by
			// BenchmarkConflictCeiling, not asserted here.
			got := f.contents()
			if want := f.writer.Written(); got.Total != want {
				t.Errorf("table %v, written %v", got.Total, want)
			}
			for id, n := range got.IDs {
				if n != 1 {
					t.Errorf("id %d present %d times", id, n)
				}
			}
			if c := testutil.ToFloat64(f.met.CommitConflicts.WithLabelValues("db.events")); int(c) != rep.Conflicts {
				t.Errorf("conflict counter %v, report %d", c, rep.Conflicts)
			}
			if res.Outcome == jobs.Succeeded && rep.Attempts < rep.Conflicts+1 {
				t.Errorf("attempts %d, conflicts %d: every conflict costs an attempt", rep.Attempts, rep.Conflicts)
			}
		})
	}
}

// budget keeps the flat-out case short: against a writer with no pause the
// rewrite may legitimately give up, and the test is about what it leaves.
func budget(interval time.Duration) string {
	if interval == 0 {
		return "5s"
	}
	return "20s"
}
