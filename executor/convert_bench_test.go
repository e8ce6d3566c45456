package executor_test

// The equality-delete conversion against its peer, the compaction that
// applies the same deletes, on one partition a CDC writer left with
// eqBenchDeletes equality-delete commits deleting 1% of its rows:
//
//	go test -run '^$' -bench 'EqualityDeleteConversion' -benchtime 3x -benchmem -count 2 ./executor/
//
// Each iteration rebuilds the table with the timer stopped. read-bytes/op
// is what each job read: for the conversion the equality columns' chunks
// of the data files plus the delete files (ConversionCounts.BytesRead), for
// the compaction the data files it rewrote (Report.RewrittenBytes, the
// delete files on top). scan-before-ms and scan-after-ms are one full read
// of the partition, deletes applied, before and after the job (BENCHMARKS.md section 21).

import (
	"testing"
	"time"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

const (
	eqBenchFiles   = 10
	eqBenchRows    = 50_000
	eqBenchDeletes = 50
)

// eqDeleteBenchTable is eqBenchFiles data files of eqBenchRows rows, then
// eqBenchDeletes commits each deleting 1%/eqBenchDeletes of the rows by
// equality deletes on id, spread over every file.
func eqDeleteBenchTable(b *testing.B) *fixture {
	b.Helper()
	f := newFixture(b, streamwriter.MergeOnReadProperties)
	for range eqBenchFiles {
		f.commit("a", eqBenchRows)
	}
	total := int64(eqBenchFiles * eqBenchRows)
	perDelete := total / 100 / eqBenchDeletes
	for d := range int64(eqBenchDeletes) {
		ids := make([]int64, 0, perDelete)
		for k := range perDelete {
			ids = append(ids, 1+(d+k*eqBenchDeletes)*total/(eqBenchDeletes*perDelete))
		}
		if _, err := f.writer.DeleteKeys(f.ctx, ids...); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

func BenchmarkEqualityDeleteConversion(b *testing.B) {
	run := func(b *testing.B, job func(*fixture) jobs.Job, read func(executorReport) int64) {
		var bytes int64
		var scan, scanBefore time.Duration
		for b.Loop() {
			b.StopTimer()
			f := eqDeleteBenchTable(b)
			j := job(f)
			start := time.Now()
			if got := f.contents(); got.Total != f.writer.Written() {
				b.Fatalf("before: table %v, writer %v", got.Total, f.writer.Written())
			}
			scanBefore += time.Since(start)
			b.StartTimer()
			res, rep := f.exec.Run(f.ctx, j)
			b.StopTimer()
			if res.Outcome != jobs.Succeeded || rep.RemovedDeleteFiles != eqBenchDeletes {
				b.Fatalf("outcome %v (%v): removed %d delete files", res.Outcome, res.Err, rep.RemovedDeleteFiles)
			}
			bytes += read(executorReport{rep.Conversion.BytesRead, rep.RewrittenBytes})
			start = time.Now()
			got := f.contents()
			scan += time.Since(start)
			if got.Total != f.writer.Written() {
				b.Fatalf("table %v, writer %v", got.Total, f.writer.Written())
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(bytes)/float64(b.N), "read-bytes/op")
		b.ReportMetric(float64(scanBefore.Milliseconds())/float64(b.N), "scan-before-ms")
		b.ReportMetric(float64(scan.Milliseconds())/float64(b.N), "scan-after-ms")
	}
	b.Run("convert", func(b *testing.B) {
		run(b, func(f *fixture) jobs.Job { return convJob(f, "a") }, func(r executorReport) int64 { return r.converted })
	})
	b.Run("compact-applying-deletes", func(b *testing.B) {
		run(b, func(f *fixture) jobs.Job {
			return applyDeletes(f.job("defaults: {target_file_size: 512MiB, small_file_count: 5, min_input_files: 5}", "a"))
		}, func(r executorReport) int64 { return r.rewritten })
	})
}

// executorReport is the two byte counts the benchmark compares.
type executorReport struct{ converted, rewritten int64 }
