package jobs

import "testing"

func TestHiddenPath(t *testing.T) {
	const tbl = "s3://lake/warehouse/db/events"
	for loc, want := range map[string]bool{
		tbl + "/data/category=a/00000-0.parquet":           false,
		tbl + "/data/category=a/.00000-0.parquet.crc":      true,
		tbl + "/data/_temporary/0/task/part-0.parquet":     true,
		tbl + "/data/_SUCCESS":                             true,
		tbl + "/data/_c=1/00000-0.parquet":                 false, // a partition named _c
		tbl + "/metadata/.00001-abc.metadata.json.crc":     true,
		"s3a://lake/warehouse/db/events/data/x/y.parquet":  false, // scheme alias
		"s3a://lake/warehouse/db/events/data/.x/y.parquet": true,
	} {
		if got := HiddenPath(tbl, loc); got != want {
			t.Errorf("HiddenPath(%q) = %v, want %v", loc, got, want)
		}
	}
}
