package planner

import (
	"testing"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

// writeAmpSim replays commits of commitBytes into one partition through a
// selection rule and reports bytes rewritten / bytes written and the most
// small files the partition held after a job. A merge writes its input
// bytes as files rolled at the target; a remainder below the small size
// stays a small file. Files at or above the small size are done.
func writeAmpSim(commitBytes int64, commits int, set thresholds.Effective, sel func([]int64) []int) (amp float64, maxSmall, jobs int) {
	var small []int64
	var written, rewritten int64
	for range commits {
		small = append(small, commitBytes)
		written += commitBytes
		for {
			pick := sel(small)
			if len(pick) == 0 {
				break
			}
			jobs++
			in := map[int]bool{}
			var total int64
			for _, i := range pick {
				in[i] = true
				total += small[i]
			}
			rewritten += total
			kept := small[:0:0]
			for i, s := range small {
				if !in[i] {
					kept = append(kept, s)
				}
			}
			small = kept
			total %= set.TargetFileSize // whole target files are done
			if total > 0 && total < set.SmallFileSize {
				small = append(small, total)
			}
		}
		maxSmall = max(maxSmall, len(small))
	}
	return float64(rewritten) / float64(written), maxSmall, jobs
}

// mergeAllSmall is the rule before tiers: every small file, once
// small_file_count of them gather (bin-packed at the target).
func mergeAllSmall(set thresholds.Effective) func([]int64) []int {
	return func(sizes []int64) []int {
		if len(sizes) < set.SmallFileCount || len(sizes) < max(set.MinInputFiles, 2) {
			return nil
		}
		out := make([]int, len(sizes))
		for i := range out {
			out[i] = i
		}
		return out
	}
}

// BenchmarkTierWriteAmplification is the planning simulation behind the
// write-amplification figure in BENCHMARKS.md: 100 KB commits into one
// partition at a 512 MiB target, enough for 10 target files, under the
// tier rule and under the rule it replaced (same run, same inputs).
//
//	go test ./planner -run '^$' -bench TierWriteAmplification -benchtime 1x
func BenchmarkTierWriteAmplification(b *testing.B) {
	const commit = 100 * 1000
	for _, tc := range []struct {
		name          string
		count, fanIn  int
		previousRules bool
	}{
		{"defaults/small_file_count=10/tier_fan_in=10", 10, 10, false},
		{"small_file_count=20/tier_fan_in=8", 20, 8, false},
		{"small_file_count=20/tier_fan_in=10", 20, 10, false},
		{"previous_rule/small_file_count=10", 10, 10, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			set := thresholds.Default().For("db.t", nil)
			set.SmallFileCount, set.TierFanIn = tc.count, tc.fanIn
			commits := int(10 * set.TargetFileSize / commit)
			sel := func(sizes []int64) []int { s, _ := jobs.TiersOf(set).Select(sizes); return s }
			if tc.previousRules {
				sel = mergeAllSmall(set)
			}
			var amp float64
			var maxSmall, jobs int
			for range b.N {
				amp, maxSmall, jobs = writeAmpSim(commit, commits, set, sel)
			}
			b.ReportMetric(amp, "rewritten/written")
			b.ReportMetric(float64(maxSmall), "max_small_files")
			b.ReportMetric(float64(jobs), "jobs")
			b.Logf("%s: %d commits of %s: rewritten/written %.2f, at most %d small files, %d jobs", tc.name, commits,
				thresholds.Size(commit), amp, maxSmall, jobs)
		})
	}
}
