package executor_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
)

// BenchmarkKilledJobCleanup: a compaction of 8 partitions x 6 small files
// is killed after writing its outputs, before its commit; the next owner
// deletes them (RecoverOutputs, the first step of its next rewrite) and
// then runs that compaction. The figures are the look's time and the
// next job's, and their ratio: what the cleanup adds to "within the TTL
// plus one job".
func BenchmarkKilledJobCleanup(b *testing.B) {
	const parts = 8
	var look, job time.Duration
	var deleted int
	for range b.N {
		b.StopTimer()
		f := newFixture(b, nil)
		var cats []string
		for p := range parts {
			cats = append(cats, fmt.Sprintf("c%d", p))
			for range 6 {
				f.commit(cats[p], 200)
			}
		}
		yaml := "defaults: {target_file_size: 1MiB, small_file_count: 5, partial_progress_max_commits: 1}"
		killed := f.leasedExecutor(slog.New(slog.DiscardHandler))
		executor.CrashAt(killed, "before-commit")
		killed.Run(f.ctx, f.job(yaml, cats...))
		next, _ := f.nextOwner()
		b.StartTimer()
		start := time.Now()
		rec, err := next.RecoverOutputs(f.ctx, ident)
		look += time.Since(start)
		if err != nil || rec.Deleted != parts {
			b.Fatalf("recovery %+v %v; want %d outputs deleted", rec, err, parts)
		}
		deleted += rec.Deleted
		start = time.Now()
		if res, _ := next.Run(f.ctx, f.job(yaml, cats...)); res.Outcome != jobs.Succeeded {
			b.Fatalf("next job: %v %v", res.Outcome, res.Err)
		}
		job += time.Since(start)
	}
	b.ReportMetric(float64(look.Milliseconds())/float64(b.N), "look-ms/op")
	b.ReportMetric(float64(job.Milliseconds())/float64(b.N), "next-job-ms/op")
	b.ReportMetric(float64(look)/float64(job), "look/job")
	b.ReportMetric(float64(deleted)/float64(b.N), "deleted/op")
}
