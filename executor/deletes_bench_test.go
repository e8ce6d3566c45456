package executor_test

// Benchmarks of delete maintenance (issue 4) on one partition written by a
// merge-on-read CDC writer: delBenchFiles data files of delBenchRows rows,
// then delBenchDeletes DELETE commits of delBenchPerDelete rows each (one
// small position-delete file per commit, as iceberg-go writes them).
//
//	go test -run '^$' -bench 'PositionDeleteRewrite|ScanAfterDeleteJobs' -benchmem -count 5 ./executor/
//
// BenchmarkPositionDeleteRewrite times the rewrite_position_deletes job
// (read the delete files, drop dangling entries, write one merged file,
// commit) and reports delete rows merged per second; the table is rebuilt
// before each iteration with the timer stopped. BenchmarkScanAfterDeleteJobs
// times a full read of the partition (deletes applied) on three copies of
// the same table: untouched, after the position-delete rewrite, and after a
// compaction that applies the deletes — the read-side effect of each job
// kind, as ratios measured in the same run (BENCHMARKS.md section 7).

import (
	"testing"

	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
)

const (
	delBenchFiles     = 20
	delBenchRows      = 5_000
	delBenchDeletes   = 50
	delBenchPerDelete = 20
)

// deleteBenchTable builds the benchmark table in a fresh catalog.
func deleteBenchTable(b *testing.B) *fixture {
	b.Helper()
	f := newFixture(b, streamwriter.MergeOnReadProperties)
	for range delBenchFiles {
		f.commit("a", delBenchRows)
	}
	total := int64(delBenchFiles * delBenchRows)
	for d := range int64(delBenchDeletes) {
		ids := make([]int64, 0, delBenchPerDelete)
		for k := range int64(delBenchPerDelete) {
			// Spread over every data file: ids interleave the files.
			ids = append(ids, 1+(d+k*delBenchDeletes)*total/(delBenchDeletes*delBenchPerDelete))
		}
		if _, err := f.writer.DeleteRows(f.ctx, ids...); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

const delBenchYAML = "defaults: {target_file_size: 64MiB, small_file_count: 5, min_input_files: 5, delete_min_input_files: 5}"

func mergeJob(f *fixture) planner.Job {
	j := f.job(delBenchYAML, "a")
	j.Kind = planner.KindRewritePositionDeletes
	return j
}

func BenchmarkPositionDeleteRewrite(b *testing.B) {
	var merged int64
	for b.Loop() {
		b.StopTimer()
		f := deleteBenchTable(b)
		job := mergeJob(f)
		b.StartTimer()
		res, rep := f.exec.Run(f.ctx, job)
		if res.Outcome != planner.Succeeded || rep.RewrittenDeleteFiles != delBenchDeletes || rep.AddedDeleteFiles != 1 {
			b.Fatalf("outcome %v (%v): merged %d files into %d", res.Outcome, res.Err, rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
		}
		merged += delBenchDeletes * delBenchPerDelete
	}
	b.ReportMetric(float64(merged)/b.Elapsed().Seconds(), "delete-rows/s")
}

func BenchmarkScanAfterDeleteJobs(b *testing.B) {
	untouched := deleteBenchTable(b)
	want := untouched.writer.Written()

	afterMerge := deleteBenchTable(b)
	if res, _ := afterMerge.exec.Run(afterMerge.ctx, mergeJob(afterMerge)); res.Outcome != planner.Succeeded {
		b.Fatalf("merge: %v %v", res.Outcome, res.Err)
	}
	afterCompaction := deleteBenchTable(b)
	if res, _ := afterCompaction.exec.Run(afterCompaction.ctx, applyDeletes(afterCompaction.job(delBenchYAML, "a"))); res.Outcome != planner.Succeeded {
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
