package executor

import (
	"cmp"
	"slices"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

// tierGroups plans the small-file compaction of partitions that no delete
// threshold triggered: per partition, the small files planner.SelectTiered
// picks (the rule the planner scheduled the partition by), plus any file
// carrying delete_file_threshold delete files, which rides along in a
// merge that happens anyway. A merge larger than max_group_size is split
// into groups of at most that many input bytes, files in size order; it
// returns the groups and the number of files left alone.
func tierGroups(tasks []table.FileScanTask, keys *planner.Keyer, set thresholds.Effective) ([]table.CompactionTaskGroup, int) {
	byPartition := map[string][]table.FileScanTask{}
	var order []string
	for _, t := range tasks {
		key := keys.Key(t.File.SpecID(), t.File.Partition())
		if _, seen := byPartition[key]; !seen {
			order = append(order, key)
		}
		byPartition[key] = append(byPartition[key], t)
	}
	var groups []table.CompactionTaskGroup
	skipped := 0
	for _, key := range order {
		var small, heavy []table.FileScanTask
		for _, t := range byPartition[key] {
			switch {
			case t.File.FileSizeBytes() < set.SmallFileSize:
				small = append(small, t)
			case len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) >= max(set.DeleteFileThreshold, 1):
				heavy = append(heavy, t)
			}
		}
		sizes := make([]int64, len(small))
		for i, t := range small {
			sizes[i] = t.File.FileSizeBytes()
		}
		sel, _ := planner.SelectTiered(sizes, set)
		if len(sel) == 0 {
			skipped += len(byPartition[key])
			continue
		}
		chosen := make([]table.FileScanTask, 0, len(sel)+len(heavy))
		for _, i := range sel {
			chosen = append(chosen, small[i])
		}
		chosen = append(chosen, heavy...)
		skipped += len(byPartition[key]) - len(chosen)
		for _, g := range splitGroup(key, chosen, set.MaxGroupSize) {
			if rewriteChangesNothing(g.Tasks) {
				skipped++
				continue
			}
			groups = append(groups, g)
		}
	}
	return groups, skipped
}

// splitGroup cuts one partition's merge into groups of at most limit input
// bytes, smallest files first; a last group of one file joins the one
// before it (alone it would be rewritten into itself).
func splitGroup(key string, tasks []table.FileScanTask, limit int64) []table.CompactionTaskGroup {
	slices.SortStableFunc(tasks, func(a, b table.FileScanTask) int {
		return cmp.Compare(a.File.FileSizeBytes(), b.File.FileSizeBytes())
	})
	var out []table.CompactionTaskGroup
	cur := table.CompactionTaskGroup{PartitionKey: key}
	for _, t := range tasks {
		if len(cur.Tasks) >= 2 && limit > 0 && cur.TotalSizeBytes+t.File.FileSizeBytes() > limit {
			out = append(out, cur)
			cur = table.CompactionTaskGroup{PartitionKey: key}
		}
		cur.Tasks = append(cur.Tasks, t)
		cur.TotalSizeBytes += t.File.FileSizeBytes()
	}
	if len(cur.Tasks) == 1 && len(out) > 0 {
		last := &out[len(out)-1]
		last.Tasks = append(last.Tasks, cur.Tasks...)
		last.TotalSizeBytes += cur.TotalSizeBytes
	} else if len(cur.Tasks) > 0 {
		out = append(out, cur)
	}
	return out
}
