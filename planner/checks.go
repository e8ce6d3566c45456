package planner

// The thresholds of a partition and of the table's manifests, measured
// from the counters: each check is what `reactor plan` shows and what the
// picker (pick.go) decides from, so the two read the same numbers.

import (
	"fmt"
	"slices"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

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

// partitionVerdict is what partitionDue finds in one partition: every
// check it measured and, when one is over, the job that fixes it.
type partitionVerdict struct {
	checks []Check
	due    bool
	kind   jobkind.Kind
	reason jobs.Reason
	// applyDeletes: the compaction applies the partition's deletes.
	applyDeletes bool
}

// partitionDue evaluates every partition threshold and, when one is over,
// the job that fixes the partition: compaction (applying deletes when a
// delete threshold asked for it), a position-delete rewrite, or, for
// tables with a sort or zorder strategy, a sort rewrite, in that order of
// precedence (the cheap fixes first; the sort comes on its own cadence).
// A kind in settled found nothing to do since the partition's last write
// and is passed over for the next one.
func partitionDue(c Counters, set thresholds.Effective, now time.Time, settled ...jobkind.Kind) partitionVerdict {
	// The scheduler and Explain share tierCheck, so plan shows exactly
	// what run acts on, and run only what the executor will merge.
	small := tierCheck(c, set)
	files, rows := deleteChecks(c, set)
	checks := []Check{small, files, rows}
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
			return partitionVerdict{checks: checks, due: true, kind: cand.kind, reason: cand.reason, applyDeletes: cand.applyDeletes}
		}
	}
	return partitionVerdict{checks: checks}
}

// tierCheck is the compaction trigger of one partition, from its counters:
// over exactly when the tier rule (jobs.Tiers.Select) would pick a merge.
func tierCheck(c Counters, set thresholds.Effective) Check {
	t := jobs.TiersOf(set)
	if k := t.Full(c.Tiers); k >= 0 {
		return Check{Threshold: jobs.TierFanIn, Measured: int64(c.Tiers[k]), Limit: int64(t.MergeFiles()), Unit: "files",
			Over: true, Note: fmt.Sprintf("size tier %d (files of %s to %s) is full", k,
				thresholds.Size(t.Floor(k)), thresholds.Size(t.Floor(k-1)))}
	}
	return Check{Threshold: jobs.SmallFileCount, Measured: int64(c.SmallFiles), Limit: int64(set.SmallFileCount),
		Unit: "files", Over: c.SmallFiles >= set.SmallFileCount && c.SmallFiles >= t.CapFiles(),
		Note: fmt.Sprintf("files below %s", thresholds.Size(set.SmallFileSize))}
}

// manifestFloor is the fewest data manifests a rewrite clustered by
// partition can leave: one per partition holding data files.
func (tc *tableCounters) manifestFloor() int {
	n := 0
	for _, ps := range tc.partitions {
		if ps.DataFiles > 0 {
			n++
		}
	}
	return max(n, 1)
}

// manifestCheck is the manifest_count threshold of a table: over once the
// current snapshot has manifest_count data manifests and more than a
// rewrite can merge them into (N partitions give N manifests again: a
// manifest_count at or below N would rewrite N into N forever).
func manifestCheck(manifests, floor, limit int) Check {
	c := Check{Threshold: jobs.ManifestCount, Measured: int64(manifests), Limit: int64(limit), Unit: "manifests",
		Over: manifests >= limit && manifests > floor}
	if manifests >= limit && manifests <= floor {
		c.Note = fmt.Sprintf("a rewrite clustered by partition cannot go below %d manifests (one per partition): "+
			"raise manifest_count above %d for this table", floor, floor)
	}
	return c
}
