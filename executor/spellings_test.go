package executor

import (
	"slices"
	"testing"
)

// The spellings of one file on the two sides of an orphan comparison
// meet: Java's file:/ against iceberg-go's file:///, a percent escape kept
// literally in a file name against its decoded form, s3a against s3.
func TestSpellingsMeet(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{"file:/tmp/wh/t/data/category=a/f.parquet", "file:///tmp/wh/t/data/category=a/f.parquet"},
		{"file:/tmp/wh/t/data/category=it%27s/f.parquet", "file:///tmp/wh/t/data/category=it's/f.parquet"},
		{"s3a://lake/t/data/x.parquet", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/c=%C3%BC/x.parquet", "s3://lake/t/data/c=ü/x.parquet"},
	} {
		if !slices.ContainsFunc(spellings(tt.a), func(k string) bool { return slices.Contains(spellings(tt.b), k) }) {
			t.Errorf("%s and %s do not meet: %v vs %v", tt.a, tt.b, spellings(tt.a), spellings(tt.b))
		}
	}
	if a, b := spellings("file:///tmp/a/x.parquet"), spellings("file:///tmp/b/x.parquet"); slices.ContainsFunc(a, func(k string) bool { return slices.Contains(b, k) }) {
		t.Errorf("different files meet: %v vs %v", a, b)
	}
}
