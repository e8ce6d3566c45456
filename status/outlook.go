package status

import (
	"fmt"
	"strings"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/planner"
)

// outlook turns the planner's outlook of a table with no job queued or
// running (the picker's decision with the running reactor's state) into
// what / shows: the jobs due (the first is starting), or one line on why
// nothing is: what holds a due job (a cool-down, a settled expiry), a
// partition waiting (its quiet period, its cool-down), else the threshold
// nearest its limit (one
// that reached its limit without being over, held by a rule such as
// retain_last, is never the nearest: it is said as held).
func outlook(plan planner.Plan) (due []string, why string) {
	for _, j := range plan.Jobs {
		var rs []string
		for _, r := range j.Reasons {
			rs = append(rs, r.String())
		}
		due = append(due, j.Kind.String()+": "+strings.Join(rs, "; "))
	}
	if len(due) > 0 {
		return due, ""
	}
	if len(plan.Partitions) == 0 {
		return nil, "no data files"
	}
	if len(plan.Held) > 0 {
		return nil, "held: " + plan.Held[0]
	}
	for _, pp := range plan.Partitions {
		if pp.Wait != "" {
			return nil, pp.Key + ": " + pp.Wait
		}
	}
	var (
		best      planner.Check
		bestWhere string
		bestShare = -1.0
		held      planner.Check
	)
	consider := func(c planner.Check, where string) {
		if c.Limit <= 0 || !countsTowardAJob(c.Threshold) {
			return
		}
		if c.Measured >= c.Limit {
			// Reached but not over: another rule holds it (retain_last
			// keeps the only snapshot old enough to expire). It is not
			// near a job, however far past its limit it looks.
			if held.Threshold == "" {
				held = c
			}
			return
		}
		if share := float64(c.Measured) / float64(c.Limit); share > bestShare {
			best, bestWhere, bestShare = c, where, share
		}
	}
	for _, pp := range plan.Partitions {
		for _, c := range pp.Checks {
			consider(c, pp.Key)
		}
	}
	for _, c := range plan.TableWide {
		consider(c, "table")
	}
	switch {
	case bestShare >= 0:
		return nil, fmt.Sprintf("nearest: %s %d of %d %s (%s)", best.Threshold, best.Measured, best.Limit, best.Unit, bestWhere)
	case held.Threshold != "" && held.Note != "":
		return nil, string(held.Threshold) + ": " + held.Note
	case held.Threshold != "":
		return nil, string(held.Threshold) + " reached, held by another rule"
	}
	return nil, "every threshold is off"
}

// countsTowardAJob: thresholds whose measured value grows toward a job.
// The quiet merge's measures how long a partition has gone unwritten, and
// the orphan margin is not measured by the planner at all.
func countsTowardAJob(threshold jobs.Threshold) bool {
	switch threshold {
	case jobs.CompactWhenQuietAfter, jobs.OrphanMargin:
		return false
	}
	return true
}
