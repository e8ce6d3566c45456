package planner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// Check is one threshold measured against its limit.
type Check struct {
	Threshold jobs.Threshold `json:"threshold"`
	Measured  int64          `json:"measured"`
	Limit     int64          `json:"limit"`
	// Unit says how to read Measured and Limit: files, manifests,
	// snapshots or seconds.
	Unit string `json:"unit"`
	// Over is true when the measured value reached the limit.
	Over bool   `json:"over"`
	Note string `json:"note,omitempty"`
}

// PartitionPlan is what the planner sees in one partition.
type PartitionPlan struct {
	Key      string   `json:"partition"`
	Counters Counters `json:"counters"`
	Checks   []Check  `json:"checks"`
	// Due is true when the partition would be compacted now; Wait says
	// why one over its threshold would not be yet.
	Due  bool   `json:"due"`
	Wait string `json:"wait,omitempty"`
}

// Plan is `reactor plan TABLE`: every threshold's measured value and limit
// for the table's current snapshot, and the jobs a fresh reactor would
// schedule for it, in the order it would run them.
type Plan struct {
	Table      string               `json:"table"`
	SnapshotID int64                `json:"snapshot_id"`
	Settings   thresholds.Effective `json:"settings"`
	Partitions []PartitionPlan      `json:"partitions"`
	TableWide  []Check              `json:"table_checks"`
	Jobs       []PlannedJob         `json:"jobs"`
}

// PlannedJob is a job Explain found due.
type PlannedJob struct {
	Kind       jobkind.Kind  `json:"kind"`
	Partitions []string      `json:"partitions,omitempty"`
	Reasons    []jobs.Reason `json:"reasons"`
	// InputFiles and InputBytes are the job's input (see jobs.Job).
	InputFiles int   `json:"input_files"`
	InputBytes int64 `json:"input_bytes"`
	// Backend and BackendWhy say where the job would run and why; Explain
	// leaves them empty for a caller that knows the backends (reactor
	// plan) to fill in.
	Backend    string `json:"backend,omitempty"`
	BackendWhy string `json:"backend_why,omitempty"`

	job jobs.Job
}

// Job is the job a running reactor would schedule for it (without an id).
func (j PlannedJob) Job() jobs.Job { return j.job }

// percent is n/d as a whole percentage (0 when d is 0).
func percent(n, d int64) int64 {
	if d <= 0 {
		return 0
	}
	return n * 100 / d
}

// deleteChecks measure a partition's merge-on-read debt: delete files per
// data file (counted only from delete_min_input_files delete files on, so
// one delete against one file does not trigger a job) and delete rows per
// data row.
func deleteChecks(c Counters, set thresholds.Effective) (files, rows Check) {
	n := c.DeleteFiles()
	files = Check{Threshold: jobs.DeleteFileRatio, Measured: percent(int64(n), int64(c.DataFiles)),
		Limit: int64(set.DeleteFileRatio * 100), Unit: "percent",
		Over: n >= set.DeleteMinInputFiles && float64(n) >= set.DeleteFileRatio*float64(c.DataFiles),
		Note: fmt.Sprintf("%d delete files (%d position, %d equality, %d deletion vectors) for %d data files; at least %d",
			n, c.PositionDeleteFiles, c.EqualityDeleteFiles, c.DeletionVectors, c.DataFiles, set.DeleteMinInputFiles)}
	if c.DataFiles == 0 && n > 0 {
		files.Measured = 100 * int64(n) // every delete is dangling
	}
	deleted := c.DeleteRows()
	rows = Check{Threshold: jobs.DeletedRowRatio, Measured: percent(deleted, c.Rows),
		Limit: int64(set.DeletedRowRatio * 100), Unit: "percent",
		Over: deleted > 0 && c.Rows > 0 && float64(deleted) >= set.DeletedRowRatio*float64(c.Rows),
		Note: fmt.Sprintf("%d delete rows for %d data rows", deleted, c.Rows)}
	return files, rows
}

// equalityCheck is the conversion trigger: equality_delete_file_count
// equality delete files in the partition (0: never).
func equalityCheck(c Counters, set thresholds.Effective) Check {
	return Check{Threshold: jobs.EqualityDeleteFileCount, Measured: int64(c.EqualityDeleteFiles), Limit: int64(set.EqualityDeleteFileCount),
		Unit: "files", Over: set.EqualityDeleteFileCount > 0 && c.EqualityDeleteFiles >= set.EqualityDeleteFileCount,
		Note: fmt.Sprintf("%d equality delete files (%d rows)", c.EqualityDeleteFiles, c.EqualityDeleteRows)}
}

// dvRulesCheck is the format v3 trigger of the position-delete rewrite,
// which there writes deletion vectors: the spec allows at most one per data
// file (Iceberg 1.11 refuses a table with two) and none for a data file no
// longer live, and deletion vectors are the only position deletes v3
// writers add. Measured counts the Parquet position-delete files (left from
// before an upgrade to v3) and the deletion vectors that break the rules:
// duplicates and dangling ones as dvRefs follows them, or, when more, those
// beyond one per data file (a vector added for a data file already gone is
// seen only so, or by a state built from the snapshot).
func dvRulesCheck(c Counters) Check {
	bad := max(c.DuplicateDeletionVectors+c.DanglingDeletionVectors, c.DeletionVectors-c.DataFiles, 0)
	n := int64(c.PositionDeleteFiles + bad)
	return Check{Threshold: jobs.DeletionVectorRules, Measured: n, Limit: 1, Unit: "files", Over: n >= 1,
		Note: fmt.Sprintf("format v3: %d Parquet position-delete files to rewrite into deletion vectors; %d deletion vectors for %d data files, "+
			"%d duplicate, %d dangling", c.PositionDeleteFiles, c.DeletionVectors, c.DataFiles, c.DuplicateDeletionVectors, c.DanglingDeletionVectors)}
}

// deleteRemedy picks the cheaper job that clears a partition's delete debt:
// merging its position-delete files reads and writes only the deletes, but
// it cannot remove equality deletes, drop deleted rows from the data files,
// or merge deletion vectors; then only a compaction that applies the
// deletes helps. The note says why, for the log and plan.
func deleteRemedy(c Counters, rows Check, set thresholds.Effective) (jobkind.Kind, string) {
	switch {
	case c.EqualityDeleteFiles > 0:
		return jobkind.Compact, fmt.Sprintf("%d equality delete files: only a compaction applying them removes them", c.EqualityDeleteFiles)
	case rows.Over:
		return jobkind.Compact, fmt.Sprintf("%d%% of rows deleted: rewriting the data drops them", rows.Measured)
	case c.PositionDeleteFiles < set.DeleteMinInputFiles:
		return jobkind.Compact, fmt.Sprintf("%d deletion vectors cannot be merged: compaction applies them", c.DeletionVectors)
	case c.DeleteBytes/int64(c.PositionDeleteFiles) >= set.DeleteTargetFileSize/2:
		return jobkind.Compact, fmt.Sprintf("position-delete files already average %s (target %s): compaction applies them",
			thresholds.Size(c.DeleteBytes/int64(c.PositionDeleteFiles)), thresholds.Size(set.DeleteTargetFileSize))
	}
	return jobkind.RewritePositionDeletes, fmt.Sprintf("position deletes only, %d%% of rows deleted: merging %d delete files (%s) is cheaper than rewriting %s of data",
		rows.Measured, c.PositionDeleteFiles, thresholds.Size(c.DeleteBytes), thresholds.Size(c.Bytes))
}

// sortCheck is the sort or z-order trigger of one partition: it holds
// files no sort rewrite wrote and has not been written for
// sort_quiet_period. Measured is how long it has been quiet.
func sortCheck(c Counters, set thresholds.Effective, now time.Time) Check {
	unsorted := c.DataFiles - c.SortedFiles
	quiet := now.Sub(c.LastWrite)
	if c.LastWrite.IsZero() {
		quiet = set.SortQuietPeriod // only reactor wrote it: quiet enough
	}
	return Check{Threshold: jobs.SortQuietPeriod, Measured: int64(quiet / time.Second), Limit: int64(set.SortQuietPeriod / time.Second),
		Unit: "seconds", Over: unsorted > 0 && quiet >= set.SortQuietPeriod,
		Note: fmt.Sprintf("%d of %d data files not written by a %s rewrite", unsorted, c.DataFiles, set.Strategy)}
}

// partitionDue evaluates every partition threshold and, when one is over,
// the job that fixes the partition: compaction (applying deletes when a
// delete threshold asked for it), a position-delete rewrite, or, for
// tables with a sort or zorder strategy, a sort rewrite, in that order of
// precedence (the cheap fixes first; the sort comes on its own cadence).
// A kind in settled found nothing to do since the partition's last write
// and is passed over for the next one.
func partitionDue(c Counters, set thresholds.Effective, now time.Time, settled ...jobkind.Kind) (checks []Check, kind jobkind.Kind, reason jobs.Reason, applyDeletes, due bool) {
	// The scheduler and Explain share tierCheck, so plan shows exactly
	// what run acts on, and run only what the executor will merge.
	small := tierCheck(c, set)
	files, rows := deleteChecks(c, set)
	checks = []Check{small, files, rows}
	eq := equalityCheck(c, set)
	if set.EqualityDeleteFileCount > 0 {
		checks = append(checks, eq)
	}
	type candidate struct {
		kind         jobkind.Kind
		reason       jobs.Reason
		applyDeletes bool
	}
	var candidates []candidate
	if small.Over {
		r := jobs.Reason{Threshold: small.Threshold, Measured: small.Measured, Limit: small.Limit}
		if files.Over || rows.Over || eq.Over {
			// Compacting anyway: apply the deletes while at it.
			r.Note = "also over a delete threshold: deletes applied"
		}
		candidates = append(candidates, candidate{jobkind.Compact, r, files.Over || rows.Over || eq.Over})
	}
	if c.v3 {
		dvr := dvRulesCheck(c)
		checks = append(checks, dvr)
		if dvr.Over {
			r := jobs.Reason{Threshold: dvr.Threshold, Measured: dvr.Measured, Limit: dvr.Limit,
				Note: "rewriting the position deletes into one deletion vector per data file reads and writes only the deletes"}
			candidates = append(candidates, candidate{jobkind.RewritePositionDeletes, r, false})
			// Once the rewrite found nothing it may change (a Parquet file
			// naming data files of another partition), only a compaction
			// applying the deletes removes them.
			candidates = append(candidates, candidate{jobkind.Compact, jobs.Reason{Threshold: dvr.Threshold, Measured: dvr.Measured,
				Limit: dvr.Limit, Note: "the position-delete rewrite found nothing to change: compaction applies the deletes"}, true})
		}
	}
	if eq.Over && !rows.Over {
		r := jobs.Reason{Threshold: eq.Threshold, Measured: eq.Measured, Limit: eq.Limit}
		r.Note = fmt.Sprintf("%d equality delete files: converting reads at most %s (the equality columns only; file sizes bound it) "+
			"and rewrites no data, where a compaction reads and rewrites all %s", c.EqualityDeleteFiles, thresholds.Size(c.Bytes), thresholds.Size(c.Bytes))
		candidates = append(candidates, candidate{jobkind.ConvertEqualityDeletes, r, false})
		// Once the conversion found nothing to do (a format it does not
		// write), only a compaction applying the deletes removes them.
		candidates = append(candidates, candidate{jobkind.Compact, jobs.Reason{Threshold: eq.Threshold, Measured: eq.Measured, Limit: eq.Limit,
			Note: "the equality-delete conversion found nothing to convert: compaction applies the deletes"}, true})
	}
	if files.Over || rows.Over {
		trigger := files
		if !files.Over {
			trigger = rows
		}
		k, note := deleteRemedy(c, rows, set)
		candidates = append(candidates, candidate{k, jobs.Reason{Threshold: trigger.Threshold, Measured: trigger.Measured,
			Limit: trigger.Limit, Note: note}, k == jobkind.Compact})
		if k == jobkind.RewritePositionDeletes {
			// Once the delete rewrite found nothing to merge (files of
			// other partitions, already merged), only a compaction
			// applying the deletes can still remove them.
			candidates = append(candidates, candidate{jobkind.Compact, jobs.Reason{Threshold: trigger.Threshold, Measured: trigger.Measured,
				Limit: trigger.Limit, Note: "the position-delete rewrite found nothing to merge: compaction applies the deletes"}, true})
		}
	}
	if set.Strategy.Sorts() {
		sorted := sortCheck(c, set, now)
		checks = append(checks, sorted)
		if sorted.Over {
			candidates = append(candidates, candidate{jobkind.Sort, jobs.Reason{Threshold: sorted.Threshold, Measured: sorted.Measured,
				Limit: sorted.Limit, Note: sorted.Note}, false})
		}
	}
	for _, cand := range candidates {
		if !slices.Contains(settled, cand.kind) {
			return checks, cand.kind, cand.reason, cand.applyDeletes, true
		}
	}
	return checks, 0, jobs.Reason{}, false, false
}

// Explain reads tbl's current snapshot (every live manifest once) and
// reports, without scheduling anything, what the planner measures and which
// jobs it would schedule now. Quiet periods count from the partitions' last
// writes; cool-downs do not apply (a fresh reactor has none). Orphan
// cleanup is not assessed: it needs a listing (reactor orphans --dry-run).
func Explain(ctx context.Context, tbl *table.Table, cfg *thresholds.Config, now time.Time) (Plan, error) {
	name := tablename.Format(tbl.Identifier())
	set := cfg.For(name, tbl.Properties())
	var tc tableCounters
	if _, err := tc.advance(ctx, tbl, sizesOf(set)); err != nil {
		return Plan{}, fmt.Errorf("read %s: %w", name, err)
	}
	return explain(&tc, summarizeSnapshots(tbl.Metadata()), tablename.Of(tbl.Identifier()), set, now), nil
}

// explain is Explain's evaluation, pure as iceberg-go's PlanCompaction is:
// what the counters read from the snapshot (tc) and its snapshot history
// (snaps) are over, and the jobs that follows, with no I/O.
func explain(tc *tableCounters, snaps snapshotSummary, t tablename.Name, set thresholds.Effective, now time.Time) Plan {
	plan := Plan{Table: t.String(), SnapshotID: tc.snapshotID, Settings: set}
	planned := map[jobkind.Kind]*PlannedJob{}
	for _, ps := range tc.sortedPartitions() {
		checks, kind, reason, applyDeletes, due := partitionDue(tc.evaluated(ps), set, now)
		quietChk, quietDue, quietAt := quietCheck(ps.Counters, set, now)
		checks = append(checks, quietChk)
		pp := PartitionPlan{Key: ps.Key, Counters: ps.Counters, Checks: checks}
		quiet := false
		switch {
		case !due && quietDue:
			kind, reason, due, quiet = jobkind.Compact, quietReason(quietChk), true, true
		case !due && !quietAt.IsZero():
			pp.Wait = quietChk.Note
		}
		if due {
			if quietEnd := ps.LastWrite.Add(set.QuietPeriod); !quiet && now.Before(quietEnd) {
				pp.Wait = fmt.Sprintf("written %s ago; waits for a quiet period of %s (at most max_quiet_wait %s)",
					now.Sub(ps.LastWrite).Round(time.Millisecond), set.QuietPeriod, set.MaxQuietWait)
			} else {
				pp.Due = true
				j := planned[kind]
				if j == nil {
					j = &PlannedJob{Kind: kind}
					planned[kind] = j
				}
				reason.Partition = ps.Key
				j.Partitions = append(j.Partitions, ps.Key)
				j.Reasons = append(j.Reasons, reason)
				part := ps.partition()
				part.ApplyDeletes, part.Quiet = applyDeletes, quiet
				j.job.Partitions = append(j.job.Partitions, part)
			}
		}
		plan.Partitions = append(plan.Partitions, pp)
	}
	// The order reactor runs them in.
	for _, kind := range jobkind.All() {
		if j := planned[kind]; j != nil {
			plan.Jobs = append(plan.Jobs, *j)
		}
	}

	due, reason, olderThan, retainLast, next := snaps.expiry(now, set)
	ageCheck := Check{Threshold: jobs.SnapshotMaxAge, Limit: int64(set.SnapshotMaxAge / time.Second), Unit: "seconds"}
	if n := snaps.count(); n > 0 {
		ageCheck.Measured = int64(now.Sub(snaps.at(n-1)) / time.Second)
	}
	ageCheck.Over = due && reason.Threshold == jobs.SnapshotMaxAge
	countCheck := Check{Threshold: jobs.SnapshotCount, Measured: int64(snaps.count()), Limit: int64(set.SnapshotCount),
		Unit: "snapshots", Over: due && reason.Threshold == jobs.SnapshotCount}
	switch {
	case due:
		note := fmt.Sprintf("expire snapshots older than %s beyond the newest %d; their files are deleted %s after the expiry (min_reader_margin)",
			olderThan.Round(time.Second), retainLast, set.MinReaderMargin)
		ageCheck.Note, countCheck.Note = note, note
		plan.Jobs = append(plan.Jobs, PlannedJob{Kind: jobkind.ExpireSnapshots, Reasons: []jobs.Reason{reason},
			job: jobs.Job{ExpireOlderThan: olderThan, ExpireRetainLast: retainLast}})
	case !next.IsZero():
		ageCheck.Note = fmt.Sprintf("next snapshot becomes expirable in %s", next.Sub(now).Round(time.Second))
	default:
		ageCheck.Note = fmt.Sprintf("nothing to expire beyond retain_last %d and branch/tag heads", set.RetainLast)
	}
	manifests := manifestCheck(tc.dataManifests, tc.manifestFloor(), set.ManifestCount)
	plan.TableWide = append(plan.TableWide, ageCheck, countCheck, manifests, Check{Threshold: jobs.OrphanMargin,
		Limit: int64(set.OrphanMargin / time.Second), Unit: "seconds",
		Note: fmt.Sprintf("not assessed here: needs a listing (reactor orphans --dry-run); run lists every %s, dry run: %v",
			set.OrphanListingInterval, !set.OrphanDelete)})
	if manifests.Over {
		plan.Jobs = append(plan.Jobs, PlannedJob{Kind: jobkind.RewriteManifests, Reasons: []jobs.Reason{{Partition: jobs.TableWide,
			Threshold: manifests.Threshold, Measured: manifests.Measured, Limit: manifests.Limit}}})
	}
	for i := range plan.Jobs {
		j := &plan.Jobs[i]
		j.job.Kind, j.job.Table, j.job.Reasons = j.Kind, t, j.Reasons
		j.job.Settings, j.job.ScheduledAt, j.job.BaseSnapshotID = set, now, tc.snapshotID
		j.job.Priority = jobs.PriorityOf(j.Kind, j.Reasons)
		j.job.InputFiles, j.job.InputBytes = tc.input(j.job.Partitions)
		j.InputFiles, j.InputBytes = j.job.InputFiles, j.job.InputBytes
	}
	return plan
}

// sortedPartitions lists the partitions by key.
func (tc *tableCounters) sortedPartitions() []*partitionState {
	out := make([]*partitionState, 0, len(tc.partitions))
	for _, ps := range tc.partitions {
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
