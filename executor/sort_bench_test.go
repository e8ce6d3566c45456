package executor_test

// Sort and z-order rewrites against bin-pack on the same partition (issue
// 6): 40 files of 5,000 random rows (x, y uniform over [0, 10000), a name,
// a decimal, a timestamp), target file size 256 KiB so each strategy writes
// several files. Each iteration rebuilds the partition with the timer
// stopped and runs the job through Executor.Run; MB/s is input Parquet bytes
// per second of job. After the job, the share of files iceberg-go's scan
// planning keeps for x < 1000 and for y < 1000 is reported
// (kept-x, kept-y; 1 = no pruning).
//
//	go test -run '^$' -bench 'RewriteStrategies' -benchtime 3x -benchmem -count 3 ./executor/

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
)

func BenchmarkRewriteStrategies(b *testing.B) {
	const files, perFile = 40, 5_000
	for _, c := range []struct {
		name string
		kind jobkind.Kind
		yaml string
	}{
		{"binpack", jobkind.Compact, "defaults: {target_file_size: 256KiB, small_file_count: 5, min_input_files: 2, partial_progress_max_commits: 1}"},
		{"sort", jobkind.Sort, "defaults: {target_file_size: 256KiB, strategy: sort, sort_order: 'x'}"},
		{"zorder", jobkind.Sort, "defaults: {target_file_size: 256KiB, strategy: zorder, sort_order: 'zorder(x, y)'}"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var inBytes int64
			var keptX, keptY, outFiles float64
			for b.Loop() {
				b.StopTimer()
				s := newSortTable(b, iceberg.Properties{table.WriteTargetFileSizeBytesKey: "262144"})
				r := rand.New(rand.NewPCG(1, 2))
				for f := range files {
					s.appendRows(randomRows(r, int64(f*perFile), perFile))
				}
				job := s.job(c.kind, c.yaml)
				b.StartTimer()
				res, rep := s.exec.Run(s.ctx, job)
				b.StopTimer()
				if res.Outcome != jobs.Succeeded {
					b.Fatalf("outcome %v: %v", res.Outcome, res.Err)
				}
				inBytes += rep.RewrittenBytes
				kx, n := s.keptFraction(iceberg.LessThan(iceberg.Reference("x"), int64(1000)))
				ky, _ := s.keptFraction(iceberg.LessThan(iceberg.Reference("y"), float64(1000)))
				keptX, keptY, outFiles = float64(kx)/float64(n), float64(ky)/float64(n), float64(n)
				b.StartTimer()
			}
			b.ReportMetric(float64(inBytes)/1e6/b.Elapsed().Seconds(), "MB/s")
			b.ReportMetric(keptX, "kept-x")
			b.ReportMetric(keptY, "kept-y")
			b.ReportMetric(outFiles, "files-out")
		})
	}
}
