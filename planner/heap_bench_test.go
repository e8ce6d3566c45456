package planner_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

// BenchmarkIdleTableHeap measures the Go heap the planner keeps per idle
// table: a 100-partition table of 50 snapshots (one 1 MiB data file per
// partition, then single-file appends), observed under n identifiers
// (the same metadata and files, so only the planner's per-table state
// differs), then the heap after a full GC, divided by n. The peer is the
// budget of the scaling work: 50 KB per idle 100-partition table (10,000
// tables in 1 GiB). Metrics are on (their per-table series are part of the cost).
func BenchmarkIdleTableHeap(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("tables=%d", n), func(b *testing.B) {
			parts := partitionNames(100)
			bt := newBenchTable(b)
			bt.addFiles(b, parts, 100, 1<<20)
			bt.addHistory(b, parts, history-1)
			tbl := bt.load(b)
			cfg, err := thresholds.Parse([]byte(noJobs))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				debug.FreeOSMemory()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				p := planner.New(planner.Options{Catalog: bt.cat, Config: cfg, Metrics: metrics.New(),
					Dispatch: func(jobs.Job) {}, Logger: discardLogger()})
				b.StartTimer()
				start := time.Now()
				for i := range n {
					ident := table.Identifier{"db", fmt.Sprintf("t%05d", i)}
					t := table.New(ident, tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, bt.cat)
					if err := p.Observe(context.Background(), t); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				elapsed := time.Since(start)
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				perTable := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
				b.ReportMetric(perTable/1000, "KB/table")
				b.ReportMetric(perTable/50_000, "x-budget")
				b.ReportMetric(float64(elapsed.Microseconds())/float64(n)/1000, "ms/table-observe")
				if path := os.Getenv("REACTOR_HEAP_PROFILE"); path != "" {
					if f, err := os.Create(path); err == nil {
						_ = pprof.WriteHeapProfile(f)
						_ = f.Close()
					}
				}
				runtime.KeepAlive(p)
				p.Close()
				b.StartTimer()
			}
		})
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
