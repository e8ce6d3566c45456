package jobs

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/icereactor/reactor/thresholds"
)

// MaxTiers bounds the tiers counted per partition; files smaller than the
// last tier's floor count in the last tier.
const MaxTiers = 16

// TierCounts are a partition's small files per size tier: index 0 holds
// files in [small/F, small), index k files in [small/F^(k+1), small/F^k),
// F being tier_fan_in. An array, so copies share nothing.
type TierCounts [MaxTiers]int32

// Tiers is the tier rule of one table, from its settings: which merge a
// partition's small files are due (docs/design.md#tier-rule). Like
// iceberg-go's compaction.Config, it is plain configuration whose methods
// are pure; the planner's due rule and the executor's planning both use
// it, so a scheduled job always plans a merge.
type Tiers struct {
	// SmallFileSize: files below it are small and take part.
	SmallFileSize int64
	// SmallFileCount: the small files that force a merge of the smallest.
	SmallFileCount int
	// FanIn (tier_fan_in): the files a tier holds when it merges, and the
	// size ratio between tiers.
	FanIn int
	// MinInputFiles: no merge takes fewer.
	MinInputFiles int
}

// TiersOf is the tier rule of a table's settings.
func TiersOf(set thresholds.Effective) Tiers {
	return Tiers{SmallFileSize: set.SmallFileSize, SmallFileCount: set.SmallFileCount, FanIn: set.TierFanIn,
		MinInputFiles: set.MinInputFiles}
}

// Of is the tier of a small file of size bytes.
func (t Tiers) Of(size int64) int {
	if size <= 0 || t.SmallFileSize <= 0 || t.FanIn < 2 || size >= t.SmallFileSize {
		return 0
	}
	k := int(math.Floor(math.Log(float64(t.SmallFileSize)/float64(size)) / math.Log(float64(t.FanIn))))
	return min(max(k, 0), MaxTiers-1)
}

// MergeFiles is how many files a tier must hold to merge: tier_fan_in,
// but never fewer than min_input_files (nor than two: one file merges
// into itself).
func (t Tiers) MergeFiles() int { return max(t.FanIn, t.MinInputFiles, 2) }

// CapFiles is the fewest files a merge forced by small_file_count takes.
func (t Tiers) CapFiles() int { return max(t.MinInputFiles, 2) }

// similarSize is how much larger than the files taken so far the next
// file of a small_file_count merge may be: merging files of similar size
// keeps each byte's rewrites to about one per doubling.
const similarSize = 2.0

// Full returns the smallest tier holding enough files to merge, or -1.
func (t Tiers) Full(tiers TierCounts) int {
	need := int32(t.MergeFiles())
	for k := MaxTiers - 1; k >= 0; k-- {
		if tiers[k] >= need {
			return k
		}
	}
	return -1
}

// Floor is the smallest size of tier k (k = -1: the small size).
func (t Tiers) Floor(k int) int64 {
	f := float64(t.SmallFileSize)
	for range k + 1 {
		f /= float64(max(t.FanIn, 2))
	}
	return int64(f)
}

// Select is the compaction rule of one partition: given the sizes of its
// small files (below the small size), it returns the indexes of those to
// merge now (nil: none) and the rule that chose them.
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
func (t Tiers) Select(sizes []int64) ([]int, string) {
	var tiers TierCounts
	for _, s := range sizes {
		tiers[t.Of(s)]++
	}
	if k := t.Full(tiers); k >= 0 {
		var sel []int
		for i, s := range sizes {
			if t.Of(s) >= k {
				sel = append(sel, i)
			}
		}
		return sel, fmt.Sprintf("tier %d holds %d files (tier_fan_in %d)", k, tiers[k], t.FanIn)
	}
	need := t.CapFiles()
	if len(sizes) < t.SmallFileCount || len(sizes) < need {
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
	return sel, fmt.Sprintf("%d small files (small_file_count %d): the %d smallest of similar size", len(sizes), t.SmallFileCount, len(sel))
}
