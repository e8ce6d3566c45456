package executor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/jobs"
)

// BenchmarkConflictCeiling measures against which writer commit rates a
// compaction of the partition the writer is appending to still commits,
// for reactor's executor (outputs written once; a conflict costs a refresh,
// a re-validation and a re-commit) and for iceberg-go's own
// Table.RewriteDataFiles retried whole on every conflict (re-plan, re-read,
// re-write, re-commit) with the same backoff budget.
//
//	go test -run '^$' -bench ConflictCeiling -benchtime 2x ./executor/
//
// committed/op is the fraction of runs that committed within the budget;
// attempts/op the commit attempts they needed; writer-commits/s the rate
// the writer actually achieved beside the compaction.
func BenchmarkConflictCeiling(b *testing.B) {
	const budget = 10 * time.Second
	for _, interval := range []time.Duration{100 * time.Millisecond, 50 * time.Millisecond, 20 * time.Millisecond, 0} {
		for _, strategy := range []string{"reactor", "rewrite-whole"} {
			b.Run(fmt.Sprintf("writer=%v/%s", interval, strategy), func(b *testing.B) {
				var committed, attempts, writerCommits int
				var elapsed time.Duration
				for b.Loop() {
					f := newFixture(b, nil)
					// ~8 x 0.4 MB of input: enough that re-reading and
					// re-writing it, as a whole retry does, costs what a
					// real small rewrite costs.
					for range 8 {
						f.commit("a", 4000)
					}
					bw := startBusyWriter(f, "a", interval)
					start := time.Now()
					var ok bool
					var n int
					if strategy == "reactor" {
						res, rep := f.exec.Run(f.ctx, f.job(fmt.Sprintf(
							"defaults: {target_file_size: 64MiB, small_file_count: 5, commit_retry_time: %s}", budget), "a"))
						ok, n = res.Outcome == jobs.Succeeded, rep.Attempts
					} else {
						ok, n = rewriteWhole(b, f, budget)
					}
					elapsed += time.Since(start)
					writerCommits += bw.halt(b)
					if ok {
						committed++
					}
					attempts += n
					if got, want := f.contents().Total, f.writer.Written(); got != want {
						b.Fatalf("table %v, written %v", got, want)
					}
				}
				b.ReportMetric(float64(committed)/float64(b.N), "committed/op")
				b.ReportMetric(float64(attempts)/float64(b.N), "attempts/op")
				b.ReportMetric(float64(writerCommits)/elapsed.Seconds(), "writer-commits/s")
			})
		}
	}
}

// rewriteWhole is the peer: iceberg-go's RewriteDataFiles (atomic), redone
// from scratch after every conflict until the budget is spent.
func rewriteWhole(b *testing.B, f *fixture, budget time.Duration) (bool, int) {
	deadline := time.Now().Add(budget)
	wait := 20 * time.Millisecond
	attempts := 0
	for time.Now().Before(deadline) {
		attempts++
		tbl, err := f.cat.LoadTable(f.ctx, ident)
		if err != nil {
			if !conflict.IsTransient(err) {
				b.Fatal(err)
			}
			time.Sleep(wait)
			continue
		}
		tasks, err := tbl.Scan().PlanFiles(f.ctx)
		if err != nil {
			b.Fatal(err)
		}
		var inA []table.FileScanTask
		for _, t := range tasks {
			if t.File.Partition()[1000] == "a" {
				inA = append(inA, t)
			}
		}
		cfg := compaction.DefaultConfig()
		cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = 64<<20, 48<<20, 115<<20
		plan, err := cfg.PlanCompaction(inA)
		if err != nil {
			b.Fatal(err)
		}
		groups := make([]table.CompactionTaskGroup, 0, len(plan.Groups))
		for _, g := range plan.Groups {
			groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		}
		if _, err = tbl.RewriteDataFiles(f.ctx, groups, table.RewriteDataFilesOptions{}); err == nil {
			return true, attempts
		}
		if !conflict.IsRetryable(err) {
			b.Fatalf("rewrite: %v", err)
		}
		time.Sleep(wait)
		wait = min(wait*3/2, 500*time.Millisecond)
	}
	return false, attempts
}
