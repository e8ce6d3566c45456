package planner

// The quiet merge: what the tier rule leaves in a partition once its
// writer has stopped.
//
// The tier rule keeps up to small_file_count - 1 small files per partition
// by design (docs/design.md#tier-rule): merging them sooner would rewrite
// each byte more often while the partition is written. Once nobody writes
// it, that trade is gone, and a table left as the tier rule found it reads
// at a multiple of the compacted copy's time for good. So a partition
// that has been quiet for compact_when_quiet_after, and whose small files a
// merge at the target size would reduce, gets one compaction of all of
// them: once per quiet spell (partitionState.quietMerged), never while it
// is written, and never again once its files are at what a merge can
// reach. No timer or goroutine of its own: the picker (pick.go) names the
// moment the spell is long enough, and the table's wake-up timer
// (evaluate.go, wakeAtLocked) is armed for it, as for every other deadline.

import (
	"fmt"
	"time"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

// QuietMerge says what merging every small file of a partition into files
// of the target size leaves: after is the partition's data file count then,
// ideal is ceil(bytes / target_file_size), and reduces is true when the
// merge is worth one job: more live data files than ideal, and fewer after
// the merge than now (at least two small files whose bytes fit in fewer
// target-sized files). Files at or above the small size are not rewritten.
func QuietMerge(c Counters, set thresholds.Effective) (after, ideal int, reduces bool) {
	if set.TargetFileSize <= 0 {
		return c.DataFiles, c.DataFiles, false
	}
	ideal = int(ceilDiv(c.Bytes, set.TargetFileSize))
	after = c.DataFiles - c.SmallFiles + int(ceilDiv(c.SmallBytes, set.TargetFileSize))
	return after, ideal, c.SmallFiles >= 2 && after < c.DataFiles && c.DataFiles > ideal
}

func ceilDiv(n, d int64) int64 {
	if n <= 0 {
		return 0
	}
	return (n + d - 1) / d
}

// quietWait is how long a partition must go unwritten before its quiet
// merge (0: off). Never shorter than quiet_period, which every compaction
// waits for.
func quietWait(set thresholds.Effective) time.Duration {
	if set.CompactWhenQuietAfter <= 0 {
		return 0
	}
	return max(set.CompactWhenQuietAfter, set.QuietPeriod)
}

// quietSpell is the quiet merge of one partition at a moment, unformatted
// (the picker looks at every partition on every commit): how long it has
// been quiet and must be (wait 0: off), and what a merge would leave.
type quietSpell struct {
	quiet, wait  time.Duration
	after, ideal int
	reduces      bool
}

// quietState measures the quiet spell of c at now. A partition only
// reactor wrote (LastWrite zero) counts as quiet.
func quietState(c Counters, set thresholds.Effective, now time.Time) quietSpell {
	q := quietSpell{wait: quietWait(set), quiet: max(now.Sub(c.LastWrite), 0)}
	if c.LastWrite.IsZero() {
		q.quiet = q.wait
	}
	if q.wait == 0 {
		q.after, q.ideal = c.DataFiles, c.DataFiles
		return q
	}
	q.after, q.ideal, q.reduces = QuietMerge(c, set)
	return q
}

// quietCheck measures the quiet merge of one partition at now: Over when a
// merge would reduce its files (whether or not it has been quiet long
// enough), due when it also has been, and at the moment it becomes due
// when it has not (zero when it never will without a write).
func quietCheck(c Counters, set thresholds.Effective, now time.Time) (chk Check, due bool, at time.Time) {
	q := quietState(c, set, now)
	chk = Check{Threshold: jobs.CompactWhenQuietAfter, Measured: int64(q.quiet / time.Second), Limit: int64(q.wait / time.Second), Unit: "seconds"}
	switch {
	case q.wait == 0:
		chk.Note = "off"
	case !q.reduces:
		chk.Note = fmt.Sprintf("%d files, ideal %d: a merge of the %d small files leaves %d", c.DataFiles, q.ideal, c.SmallFiles, q.after)
	case q.quiet >= q.wait:
		chk.Over, due = true, true
		chk.Note = fmt.Sprintf("quiet for %s, %d files where %d would do: merge", q.quiet.Round(time.Second), c.DataFiles, q.after)
	default:
		chk.Over, at = true, c.LastWrite.Add(q.wait)
		chk.Note = fmt.Sprintf("written %s ago, quiet merge waits until %s (%d files where %d would do)",
			q.quiet.Round(time.Second), at.Format(time.TimeOnly), c.DataFiles, q.after)
	}
	return chk, due, at
}

// quietReason is the jobs.Reason of a quiet merge that is due.
func quietReason(chk Check) jobs.Reason {
	return jobs.Reason{Threshold: chk.Threshold, Measured: chk.Measured, Limit: chk.Limit, Note: chk.Note}
}

// quietDue decides the quiet merge of a partition no other job is due
// in: true when one is due now (once per quiet spell); otherwise, through
// deferUntil, when one will be. It formats nothing unless the merge is due.
func quietDue(ps *partitionState, set thresholds.Effective, now time.Time, deferUntil func(time.Time)) (jobs.Reason, bool) {
	if ps.quietMerged == spellOf(ps) {
		return jobs.Reason{}, false // this spell's merge was scheduled already
	}
	q := quietState(ps.Counters, set, now)
	switch {
	case q.wait == 0 || !q.reduces:
		return jobs.Reason{}, false
	case q.quiet < q.wait:
		deferUntil(ps.LastWrite.Add(q.wait))
		return jobs.Reason{}, false
	}
	chk, _, _ := quietCheck(ps.Counters, set, now)
	return quietReason(chk), true
}

// spellOf names the partition's current quiet spell by its last write
// (never 0, which is "no merge scheduled": a partition only reactor wrote
// is spell -1).
func spellOf(ps *partitionState) instant {
	if ps.LastWrite.IsZero() {
		return -1
	}
	return instantOf(ps.LastWrite)
}

// idealDataFiles is the data files the table would hold with every
// partition's bytes in files of the target size: QuietMerge's ideal,
// summed (reactor_table_ideal_data_files).
func (tc *tableCounters) idealDataFiles(target int64) int64 {
	if target <= 0 {
		return 0
	}
	var n int64
	for _, ps := range tc.partitions {
		n += ceilDiv(ps.Bytes, target)
	}
	return n
}
