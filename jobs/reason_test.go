package jobs

import (
	"strings"
	"testing"
)

// Reasons read as words, never as an inequality that may be false
// ("manual=1>=5"), in logs, `reactor plan` and the status pages.
func TestReasonString(t *testing.T) {
	for _, tc := range []struct {
		r    Reason
		want string
	}{
		{Reason{Partition: "category=a", Threshold: "small_file_count", Measured: 5, Limit: 5, Note: "files below 192KiB"},
			"category=a: 5 small files, threshold 5 (files below 192KiB)"},
		{Reason{Partition: "category=a", Threshold: "small_file_count", Measured: 1, Limit: 8}, "category=a: 1 small file, threshold 8"},
		{Reason{Partition: TableWide, Threshold: "manual"}, "manual run"},
		{Reason{Partition: TableWide, Threshold: "manual", Limit: 432000, Note: "snapshots older than 120h beyond the newest 1"},
			"manual run (snapshots older than 120h beyond the newest 1)"},
		{Reason{Partition: "category=p0", Threshold: "manual", Measured: 1, Limit: 5, Note: "1 small file, rewritten in groups of at least min_input_files 5"},
			"category=p0: manual run (1 small file, rewritten in groups of at least min_input_files 5)"},
		{Reason{Partition: TableWide, Threshold: "manifest_count", Measured: 21, Limit: 20}, "21 data manifests, threshold 20"},
		{Reason{Partition: TableWide, Threshold: "snapshot_count", Measured: 100, Limit: 100}, "100 snapshots, threshold 100"},
		{Reason{Partition: TableWide, Threshold: "snapshot_max_age", Measured: 26, Limit: 4}, "snapshots older than snapshot_max_age 4s"},
		{Reason{Partition: TableWide, Threshold: "snapshot_max_age", Measured: 500000, Limit: 432000}, "snapshots older than snapshot_max_age 120h"},
		{Reason{Partition: "category=a", Threshold: "deleted_row_ratio", Measured: 40, Limit: 30}, "category=a: 40% of rows deleted, threshold 30%"},
		{Reason{Partition: "category=a", Threshold: "tier_fan_in", Measured: 4, Limit: 4}, "category=a: 4 files in one size tier, tier_fan_in 4"},
		{Reason{Partition: "category=a", Threshold: "sort_quiet_period", Measured: 90, Limit: 60}, "category=a: quiet for 1m30s, sort_quiet_period 1m"},
		{Reason{Partition: TableWide, Threshold: "min_reader_margin", Measured: 172900, Limit: 172800}, "files unlinked 48h1m40s ago, min_reader_margin 48h"},
		{Reason{Partition: TableWide, Threshold: "some_new_rule", Measured: 3, Limit: 2}, "some_new_rule 3, limit 2"},
	} {
		got := tc.r.String()
		if got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.r, got, tc.want)
		}
		if strings.Contains(got, ">=") {
			t.Errorf("%q reads as an inequality", got)
		}
	}
}
