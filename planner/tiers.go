package planner

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/icereactor/reactor/thresholds"
)

// maxTiers bounds the tiers counted per partition; files smaller than the
// last tier's floor count in the last tier.
const maxTiers = 16

// TierCounts are a partition's small files per size tier: index 0 holds
// files in [small/F, small), index k files in [small/F^(k+1), small/F^k),
// F being tier_fan_in. An array, so copies of Counters share nothing.
type TierCounts [maxTiers]int32

// tierOf is the tier of a small file of size bytes.
func tierOf(size, small int64, fanIn int) int {
	if size <= 0 || small <= 0 || fanIn < 2 || size >= small {
		return 0
	}
	k := int(math.Floor(math.Log(float64(small)/float64(size)) / math.Log(float64(fanIn))))
	return min(max(k, 0), maxTiers-1)
}

// tierMergeFiles is how many files a tier must hold to merge: tier_fan_in,
// but never fewer than min_input_files (nor than two: one file merges into
// itself).
func tierMergeFiles(set thresholds.Effective) int {
	return max(set.TierFanIn, set.MinInputFiles, 2)
}

// capMergeFiles is the fewest files a merge forced by small_file_count
// takes.
func capMergeFiles(set thresholds.Effective) int { return max(set.MinInputFiles, 2) }

// similarSize is how much larger than the files taken so far the next
// file of a small_file_count merge may be: merging files of similar size
// keeps each byte's rewrites to about one per doubling.
const similarSize = 2.0

// fullTier returns the smallest tier holding enough files to merge, or -1.
func fullTier(tiers TierCounts, set thresholds.Effective) int {
	need := int32(tierMergeFiles(set))
	for k := maxTiers - 1; k >= 0; k-- {
		if tiers[k] >= need {
			return k
		}
	}
	return -1
}

// SelectTiered is the compaction rule of one partition: given the sizes of
// its small files (below the small size), it returns the indexes of those
// to merge now (nil: none) and the rule that chose them. The planner's due
// rule (tierCheck) and the executor's planning both use it, so a scheduled
// job always plans a merge.
//
//  1. A tier holding tier_fan_in files (at least min_input_files) merges
//     them, with every smaller file: each byte is rewritten about once per
//     tier on its way up to the target.
//  2. Otherwise, a partition holding small_file_count small files merges
//     its smallest files of similar size: the smallest first, then each
//     next one while it is at most twice the size of those taken, and at
//     least min_input_files. That bounds the small files of a partition at
//     small_file_count while a compacted file is rewritten only once the
//     files below it have grown to its size.
func SelectTiered(sizes []int64, set thresholds.Effective) ([]int, string) {
	var tiers TierCounts
	for _, s := range sizes {
		tiers[tierOf(s, set.SmallFileSize, set.TierFanIn)]++
	}
	if k := fullTier(tiers, set); k >= 0 {
		var sel []int
		for i, s := range sizes {
			if tierOf(s, set.SmallFileSize, set.TierFanIn) >= k {
				sel = append(sel, i)
			}
		}
		return sel, fmt.Sprintf("tier %d holds %d files (tier_fan_in %d)", k, tiers[k], set.TierFanIn)
	}
	need := capMergeFiles(set)
	if len(sizes) < set.SmallFileCount || len(sizes) < need {
		return nil, ""
	}
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[a], sizes[b]) })
	var taken int64
	var sel []int
	for _, i := range order {
		if len(sel) >= need && float64(sizes[i]) > similarSize*float64(taken) {
			break
		}
		sel = append(sel, i)
		taken += sizes[i]
	}
	return sel, fmt.Sprintf("%d small files (small_file_count %d): the %d smallest of similar size", len(sizes), set.SmallFileCount, len(sel))
}

// tierCheck is the compaction trigger of one partition, from its counters:
// over exactly when SelectTiered would pick a merge.
func tierCheck(c Counters, set thresholds.Effective) Check {
	if k := fullTier(c.Tiers, set); k >= 0 {
		return Check{Threshold: "tier_fan_in", Measured: int64(c.Tiers[k]), Limit: int64(tierMergeFiles(set)), Unit: "files",
			Over: true, Note: fmt.Sprintf("size tier %d (files of %s to %s) is full", k,
				thresholds.Size(tierFloor(k, set)), thresholds.Size(tierFloor(k-1, set)))}
	}
	return Check{Threshold: "small_file_count", Measured: int64(c.SmallFiles), Limit: int64(set.SmallFileCount),
		Unit: "files", Over: c.SmallFiles >= set.SmallFileCount && c.SmallFiles >= capMergeFiles(set),
		Note: fmt.Sprintf("files below %s", thresholds.Size(set.SmallFileSize))}
}

// tierFloor is the smallest size of tier k (k = -1: the small size).
func tierFloor(k int, set thresholds.Effective) int64 {
	f := float64(set.SmallFileSize)
	for range k + 1 {
		f /= float64(max(set.TierFanIn, 2))
	}
	return int64(f)
}
