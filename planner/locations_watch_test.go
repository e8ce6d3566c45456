package planner

import (
	"testing"

	"github.com/icereactor/reactor/tablename"
)

// Watched prefixes: a configured location, including one at a bucket's
// root (the REST catalog's warehouse s3://warehouse/ in the realparts
// suite, where the key "/" never matched and new tables were missed), and
// the parent of a known table.
func TestUnderWatchedPrefix(t *testing.T) {
	var ix locationIndex
	ix.configured = []string{"s3://warehouse/", "s3://lake/prod/wh", "s3://bare"}
	ix.set(map[string][]tableLocation{"other": {{bucket: "other", prefix: "ns.db/t/", table: tablename.MustParseName("ns.t")}}})
	tests := []struct {
		bucket, key string
		want        bool
	}{
		{"warehouse", "s2/fresh/metadata/00000-x.metadata.json", true},
		{"warehouse", "x", true},
		{"bare", "a/b/c.parquet", true},
		{"lake", "prod/wh/ns/t/data/f.parquet", true},
		{"lake", "prod/whx/ns/t/data/f.parquet", false},
		{"lake", "staging/t/data/f.parquet", false},
		{"other", "ns.db/new/metadata/00000-x.metadata.json", true}, // next to a known table
		{"other", "elsewhere/t/data/f.parquet", false},
		{"nobody", "k", false},
	}
	for _, tt := range tests {
		if _, got := ix.underWatchedPrefix(tt.bucket, tt.key); got != tt.want {
			t.Errorf("underWatchedPrefix(%q, %q) = %v, want %v", tt.bucket, tt.key, got, tt.want)
		}
	}
}
