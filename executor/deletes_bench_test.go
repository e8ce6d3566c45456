package executor_test

// Benchmarks of delete maintenance on one partition written by a
// merge-on-read CDC writer: delBenchFiles data files of delBenchRows rows,
// then delBenchDeletes DELETE commits of 20 (or 400) rows each (one small
// position-delete file per commit, as iceberg-go writes them).
//
//	go test -run '^$' -bench 'PositionDeleteRewrite|ScanAfterDeleteJobs' -benchtime 5x -benchmem -count 3 ./executor/
//
// BenchmarkPositionDeleteRewrite times the rewrite_position_deletes job
// (read the delete files, drop dangling entries, write one merged file,
// commit) and reports delete rows merged per second, beside its peer, the
// compaction that applies the same deletes; the table is rebuilt before each
// iteration with the timer stopped. BenchmarkScanAfterDeleteJobs
// times a full read of the partition (deletes applied) on three copies of
// the same table: untouched, after the position-delete rewrite, and after a
// compaction that applies the deletes — the read-side effect of each job
// kind, as ratios measured in the same run (BENCHMARKS.md section 7).

import (
	"fmt"
	"testing"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

const (
	delBenchFiles   = 20
	delBenchRows    = 5_000
	delBenchDeletes = 50
)

// deleteBenchTable builds the benchmark table in a fresh catalog, with
// perDelete rows deleted by each of the delBenchDeletes DELETE commits.
func deleteBenchTable(b *testing.B, perDelete int64) *fixture {
	b.Helper()
	f := newFixture(b, streamwriter.MergeOnReadProperties)
	for range delBenchFiles {
		f.commit("a", delBenchRows)
	}
	total := int64(delBenchFiles * delBenchRows)
	for d := range int64(delBenchDeletes) {
		ids := make([]int64, 0, perDelete)
		for k := range perDelete {
			// Spread over every data file: ids interleave the files.
			ids = append(ids, 1+(d+k*delBenchDeletes)*total/(delBenchDeletes*perDelete))
		}
		if _, err := f.writer.DeleteRows(f.ctx, ids...); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

const delBenchYAML = "defaults: {target_file_size: 64MiB, small_file_count: 5, min_input_files: 5, delete_min_input_files: 5}"

func mergeJob(f *fixture) jobs.Job {
	j := f.job(delBenchYAML, "a")
	j.Kind = jobkind.RewritePositionDeletes
	return j
}

// The merge at two delete volumes, and its peer: the compaction that
// applies the same deletes (rewriting the partition's 100,000 rows) on the
// same table.
func BenchmarkPositionDeleteRewrite(b *testing.B) {
	for _, perDelete := range []int64{20, 400} {
		rows := delBenchDeletes * perDelete
		b.Run(fmt.Sprintf("merge/delete-rows=%d", rows), func(b *testing.B) {
			var merged int64
			for b.Loop() {
				b.StopTimer()
				f := deleteBenchTable(b, perDelete)
				job := mergeJob(f)
				b.StartTimer()
				res, rep := f.exec.Run(f.ctx, job)
				if res.Outcome != jobs.Succeeded || rep.RewrittenDeleteFiles != delBenchDeletes || rep.AddedDeleteFiles != 1 {
					b.Fatalf("outcome %v (%v): merged %d files into %d", res.Outcome, res.Err, rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
				}
				merged += rows
			}
			b.ReportMetric(float64(merged)/b.Elapsed().Seconds(), "delete-rows/s")
		})
		b.Run(fmt.Sprintf("compact-applying-deletes/delete-rows=%d", rows), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				f := deleteBenchTable(b, perDelete)
				job := applyDeletes(f.job(delBenchYAML, "a"))
				b.StartTimer()
				res, rep := f.exec.Run(f.ctx, job)
				if res.Outcome != jobs.Succeeded || rep.RemovedDeleteFiles != delBenchDeletes {
					b.Fatalf("outcome %v (%v): removed %d delete files", res.Outcome, res.Err, rep.RemovedDeleteFiles)
				}
			}
		})
	}
}

func BenchmarkScanAfterDeleteJobs(b *testing.B) {
	untouched := deleteBenchTable(b, 20)
	want := untouched.writer.Written()

	afterMerge := deleteBenchTable(b, 20)
	if res, _ := afterMerge.exec.Run(afterMerge.ctx, mergeJob(afterMerge)); res.Outcome != jobs.Succeeded {
		b.Fatalf("merge: %v %v", res.Outcome, res.Err)
	}
	afterCompaction := deleteBenchTable(b, 20)
	if res, _ := afterCompaction.exec.Run(afterCompaction.ctx, applyDeletes(afterCompaction.job(delBenchYAML, "a"))); res.Outcome != jobs.Succeeded {
		b.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	for _, c := range []struct {
		name string
		f    *fixture
	}{{"untouched", untouched}, {"after-merge", afterMerge}, {"after-compaction", afterCompaction}} {
		b.Run(c.name, func(b *testing.B) {
			tbl := c.f.load()
			for b.Loop() {
				got, err := streamwriter.Read(c.f.ctx, tbl)
				if err != nil {
					b.Fatal(err)
				}
				if got.Total != want {
					b.Fatalf("read %v, want %v", got.Total, want)
				}
			}
		})
	}
}
