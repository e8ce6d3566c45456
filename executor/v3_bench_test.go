package executor_test

// BenchmarkV3PositionDeletesToDVs: the v3 upgrade case of
// rewrite_position_deletes (BENCHMARKS.md section 21, "v3"). The table of
// BenchmarkPositionDeleteRewrite (20 data files of 5,000 rows, 50 DELETE
// commits of 20 rows, one Parquet position-delete file each) upgraded to
// format v3; the job rewrites the 50 Parquet files into 20 deletion
// vectors (one per data file, one Puffin file), beside its peer, the
// compaction that applies the same deletes on the same table:
//
//	go test -run '^$' -bench 'V3PositionDeletesToDVs' -benchtime 3x -benchmem -count 2 ./executor/

import (
	"testing"

	"github.com/icereactor/reactor/jobs"
)

func v3DeleteBenchTable(b *testing.B) *fixture {
	b.Helper()
	f := deleteBenchTable(b, 20)
	if err := upgradeToV3(f.ctx, f.cat, ident); err != nil {
		b.Fatal(err)
	}
	return f
}

func BenchmarkV3PositionDeletesToDVs(b *testing.B) {
	b.Run("to-dvs", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			f := v3DeleteBenchTable(b)
			job := mergeJob(f)
			b.StartTimer()
			res, rep := f.exec.Run(f.ctx, job)
			if res.Outcome != jobs.Succeeded || rep.RewrittenDeleteFiles != delBenchDeletes || rep.AddedDeleteFiles != delBenchFiles {
				b.Fatalf("outcome %v (%v): %d delete files into %d vectors", res.Outcome, res.Err, rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
			}
		}
	})
	b.Run("compact-applying-deletes", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			f := v3DeleteBenchTable(b)
			job := applyDeletes(f.job(delBenchYAML, "a"))
			b.StartTimer()
			res, rep := f.exec.Run(f.ctx, job)
			if res.Outcome != jobs.Succeeded || rep.RemovedDeleteFiles != delBenchDeletes {
				b.Fatalf("outcome %v (%v): removed %d delete files", res.Outcome, res.Err, rep.RemovedDeleteFiles)
			}
		}
	})
}
