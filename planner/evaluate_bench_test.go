package planner

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// BenchmarkEvaluate is what run's decision costs each time a table is
// looked at (every commit, every wake-up): gather, pick and apply, no I/O,
// on a table whose partitions are all below their thresholds and still
// being written (the common case), with 50 snapshots of history.
func BenchmarkEvaluate(b *testing.B) {
	for _, parts := range []int{10, 1000} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			cfg := thresholds.Default()
			now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
			clk := newFakeClock(now)
			p := New(Options{Config: cfg, Now: clk.Now, AfterFunc: clk.AfterFunc, Logger: slog.New(slog.DiscardHandler),
				Dispatch: func(j jobs.Job) { b.Fatalf("scheduled %s", j.Kind) }})
			defer p.Close()
			st := &tableState{table: tablename.MustParseName("db.t"), settings: cfg.For("db.t", nil)}
			st.counters.partitions = map[string]*partitionState{}
			st.counters.snapshotID = 100
			for k := range parts {
				key := fmt.Sprintf("day=%05d", k)
				st.counters.partitions[key] = &partitionState{Key: key, Counters: Counters{DataFiles: 6, SmallFiles: 3, Bytes: 40 << 20,
					SmallBytes: 3 << 20, Rows: 60_000, LastWrite: now.Add(-time.Duration(k%60) * time.Second)}}
			}
			for i := range 50 {
				st.snapshots.timesMs = append(st.snapshots.timesMs, now.Add(-time.Duration(i)*time.Minute).UnixMilli())
				st.snapshots.refHeads = append(st.snapshots.refHeads, i == 0)
				st.snapshots.ids = append(st.snapshots.ids, int64(i+1))
			}
			for b.Loop() {
				st.mu.Lock()
				p.evaluateLocked(st)
				st.mu.Unlock()
			}
		})
	}
}
