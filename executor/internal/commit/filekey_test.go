package commit

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// Deletion vectors of one Puffin file have distinct keys (path and blob
// offset); every other file is keyed by its path.
func TestFileKey(t *testing.T) {
	build := func(content iceberg.ManifestEntryContent, format iceberg.FileFormat, path string, dv *int64) iceberg.DataFile {
		t.Helper()
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, content, path, format, nil, nil, nil, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		if dv != nil {
			b = b.ReferencedDataFile("s3://b/t/data/x.parquet").ContentOffset(*dv).ContentSizeInBytes(40)
		}
		return b.Build()
	}
	off := func(n int64) *int64 { return &n }
	tests := []struct {
		name string
		df   iceberg.DataFile
		want string
	}{
		{"data file", build(iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/x.parquet", nil), "s3://b/t/data/x.parquet"},
		{"Parquet position deletes", build(iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "s3://b/t/data/d.parquet", nil), "s3://b/t/data/d.parquet"},
		{"equality deletes", build(iceberg.EntryContentEqDeletes, iceberg.ParquetFile, "s3://b/t/data/e.parquet", nil), "s3://b/t/data/e.parquet"},
		{"first vector of a Puffin file", build(iceberg.EntryContentPosDeletes, iceberg.PuffinFile, "s3://b/t/data/v.puffin", off(4)), "s3://b/t/data/v.puffin#4"},
		{"second vector of the same file", build(iceberg.EntryContentPosDeletes, iceberg.PuffinFile, "s3://b/t/data/v.puffin", off(44)), "s3://b/t/data/v.puffin#44"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FileKey(tt.df); got != tt.want {
				t.Errorf("FileKey = %q, want %q", got, tt.want)
			}
		})
	}
}
