package status

import (
	"reflect"
	"testing"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/planner"
)

func TestOutlook(t *testing.T) {
	small := func(measured, limit int64) planner.Check {
		return planner.Check{Threshold: "small_file_count", Measured: measured, Limit: limit, Unit: "files"}
	}
	quiet := planner.Check{Threshold: "compact_when_quiet_after", Measured: 86400, Limit: 60, Unit: "seconds"}
	for _, tc := range []struct {
		name    string
		plan    planner.Plan
		wantDue []string
		wantWhy string
	}{
		{name: "no partition", wantWhy: "no data files"},
		{name: "a job due", plan: planner.Plan{
			Partitions: []planner.PartitionPlan{{Key: "category=a", Checks: []planner.Check{small(9, 8)}, Due: true}},
			Jobs: []planner.PlannedJob{{Kind: jobkind.Compact, Reasons: []jobs.Reason{
				{Partition: "category=a", Threshold: "small_file_count", Measured: 9, Limit: 8}}}}},
			wantDue: []string{"compact: category=a: 9 small files, threshold 8"}},
		{name: "waiting for its quiet period", plan: planner.Plan{Partitions: []planner.PartitionPlan{
			{Key: "category=a", Checks: []planner.Check{small(1, 8)}},
			{Key: "category=b", Checks: []planner.Check{small(9, 8)}, Wait: "written 1s ago; waits for a quiet period of 5s"}}},
			wantWhy: "category=b: written 1s ago; waits for a quiet period of 5s"},
		{name: "the nearest threshold, not the quiet time", plan: planner.Plan{
			Partitions: []planner.PartitionPlan{
				{Key: "category=a", Checks: []planner.Check{small(2, 8), quiet}},
				{Key: "category=b", Checks: []planner.Check{small(6, 8), quiet}}},
			TableWide: []planner.Check{{Threshold: "snapshot_count", Measured: 40, Limit: 100, Unit: "snapshots"},
				{Threshold: "orphan_margin", Limit: 86400, Unit: "seconds"}}},
			wantWhy: "nearest: small_file_count 6 of 8 files (category=b)"},
		{name: "a limit reached but held by retain_last is not the nearest", plan: planner.Plan{
			Partitions: []planner.PartitionPlan{{Key: "category=a", Checks: []planner.Check{small(1, 8)}}},
			TableWide: []planner.Check{{Threshold: "snapshot_max_age", Measured: 26, Limit: 4, Unit: "seconds",
				Note: "nothing to expire beyond retain_last 1 and branch/tag heads"}}},
			wantWhy: "nearest: small_file_count 1 of 8 files (category=a)"},
		{name: "only a held limit", plan: planner.Plan{
			Partitions: []planner.PartitionPlan{{Key: "category=a", Checks: []planner.Check{{Threshold: "small_file_count", Measured: 3}}}},
			TableWide: []planner.Check{{Threshold: "snapshot_max_age", Measured: 26, Limit: 4, Unit: "seconds",
				Note: "nothing to expire beyond retain_last 1 and branch/tag heads"}}},
			wantWhy: "snapshot_max_age: nothing to expire beyond retain_last 1 and branch/tag heads"},
		{name: "everything off", plan: planner.Plan{Partitions: []planner.PartitionPlan{{Key: "category=a",
			Checks: []planner.Check{{Threshold: "small_file_count", Measured: 3}}}}},
			wantWhy: "every threshold is off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, why := outlook(tc.plan)
			if !reflect.DeepEqual(due, tc.wantDue) || why != tc.wantWhy {
				t.Errorf("outlook = %q, %q; want %q, %q", due, why, tc.wantDue, tc.wantWhy)
			}
		})
	}
}
