package executor

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

// tierGroups plans the small-file compaction of partitions that no delete
// threshold triggered: per partition, the small files the tier rule (jobs.Tiers)
// picks (the rule the planner scheduled the partition by), plus any file
// carrying delete_file_threshold delete files, which rides along in a
// merge that happens anyway. A merge larger than max_group_size is split
// into groups of at most that many input bytes, files in size order; it
// returns the groups and the number of files left alone.
//
// A partition in quiet (jobs.Partition.Quiet: quiet for
// compact_when_quiet_after) merges every small file instead of the tier
// rule's pick, the outputs rolled at the target.
func tierGroups(tasks []table.FileScanTask, keys *jobs.Keyer, set thresholds.Effective, quiet map[string]bool) ([]table.CompactionTaskGroup, int) {
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
		sel, _ := jobs.TiersOf(set).Select(sizes)
		if quiet[key] && len(small) >= 2 {
			sel = sel[:0]
			for i := range small {
				sel = append(sel, i)
			}
		}
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

// idlePartitions names the job's partitions that no planned group touches,
// with why: the planner settles them for this kind until they are written.
func idlePartitions(job jobs.Job, groups []table.CompactionTaskGroup, why string) map[string]string {
	touched := map[string]bool{}
	for _, g := range groups {
		touched[g.PartitionKey] = true
	}
	var idle map[string]string
	for _, p := range job.Partitions {
		if !touched[p.Key] {
			if idle == nil {
				idle = map[string]string{}
			}
			idle[p.Key] = why
		}
	}
	return idle
}

// partitionTask is a scan task selected for a rewrite, with the key of
// its partition.
type partitionTask struct {
	key  string
	task table.FileScanTask
}

// selectPartitions selects the tasks of the job's partitions (parts) by
// their exact partition tuple, never by a row filter, and clears their
// residual: a rewrite replaces whole files, so it must read every row of
// them (a residual narrower than the file loses rows:
// docs/design.md#pitfall-residual-filters). A task that is a range of a
// file is refused for the same reason. Every data rewrite selects its
// inputs here.
func selectPartitions(tasks []table.FileScanTask, keys *jobs.Keyer, parts []jobs.Partition) ([]partitionTask, error) {
	want := make(map[string]bool, len(parts))
	for _, p := range parts {
		want[p.Key] = true
	}
	var out []partitionTask
	for _, t := range tasks {
		key := keys.Key(t.File.SpecID(), t.File.Partition())
		if !want[key] {
			continue
		}
		if t.Start != 0 || (t.Length != 0 && t.Length != t.File.FileSizeBytes()) {
			return nil, fmt.Errorf("scan planning split %s into ranges; refusing to rewrite part of a file", t.File.FilePath())
		}
		t.Residual = iceberg.AlwaysTrue{}
		out = append(out, partitionTask{key: key, task: t})
	}
	return out, nil
}

// planGroups plans bin-pack groups over the job's partitions only, their
// tasks selected by selectPartitions.
func planGroups(ctx context.Context, tbl *table.Table, job jobs.Job) ([]table.CompactionTaskGroup, int, error) {
	applyDeletes, quiet := map[string]bool{}, map[string]bool{}
	for _, p := range job.Partitions {
		applyDeletes[p.Key], quiet[p.Key] = p.ApplyDeletes, p.Quiet
	}
	tasks, err := datapath.Scan(ctx, tbl).PlanFiles(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("plan files: %w", err)
	}
	keys := jobs.NewKeyer(tbl.Metadata())
	picked, err := selectPartitions(tasks, keys, job.Partitions)
	if err != nil {
		return nil, 0, err
	}
	var selected, withDeletes []table.FileScanTask
	for _, pt := range picked {
		if applyDeletes[pt.key] {
			withDeletes = append(withDeletes, pt.task)
		} else {
			selected = append(selected, pt.task)
		}
	}
	cfg := compaction.Config{
		TargetFileSizeBytes:  job.Settings.TargetFileSize,
		MinFileSizeBytes:     job.Settings.SmallFileSize,
		MaxFileSizeBytes:     job.Settings.MaxFileSize,
		MinInputFiles:        uint(job.Settings.MinInputFiles),
		DeleteFileThreshold:  max(job.Settings.DeleteFileThreshold, 1),
		DeleteRatioThreshold: job.Settings.DeletedRowRatio,
		PackingLookback:      compaction.DefaultPackingLookback,
	}
	if cfg.DeleteRatioThreshold <= 0 {
		cfg.DeleteRatioThreshold = compaction.DefaultDeleteRatioThreshold
	}
	// A partition over a delete threshold has every data file that any
	// delete applies to rewritten, alone if need be: the deletes can only
	// be dropped once nothing they apply to survives.
	deletesCfg := cfg
	deletesCfg.DeleteFileThreshold, deletesCfg.MinInputFiles = 1, 1
	// Small-file compaction follows the tier rule the planner scheduled
	// the partitions by (jobs.Tiers.Select).
	groups, skipped := tierGroups(selected, keys, job.Settings, quiet)
	for _, p := range []struct {
		cfg   compaction.Config
		tasks []table.FileScanTask
	}{{deletesCfg, withDeletes}} {
		if len(p.tasks) == 0 {
			continue
		}
		plan, err := p.cfg.PlanCompaction(p.tasks)
		if err != nil {
			return nil, 0, fmt.Errorf("plan compaction: %w", err)
		}
		skipped += plan.SkippedFiles
		for _, g := range plan.Groups {
			if rewriteChangesNothing(g.Tasks) {
				// One file, nothing applying to it: the output would be
				// the input again, and the partition would be found
				// "over its threshold" the same way after the commit.
				skipped += len(g.Tasks)
				continue
			}
			groups = append(groups, table.CompactionTaskGroup{
				// Keyed as the planner keys partitions (the log reads
				// category=a, and idle partitions are found by it).
				PartitionKey: keys.Key(g.Tasks[0].File.SpecID(), g.Tasks[0].File.Partition()),
				Tasks:        g.Tasks, TotalSizeBytes: g.TotalSizeBytes,
			})
		}
	}
	return groups, skipped, nil
}

// rewriteChangesNothing reports whether rewriting tasks as one group would
// write the same rows into one file again: a single input file that no
// delete applies to (a small file is never split, so it comes out whole).
func rewriteChangesNothing(tasks []table.FileScanTask) bool {
	if len(tasks) != 1 {
		return false
	}
	t := tasks[0]
	return len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) == 0
}
