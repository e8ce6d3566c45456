package scope

import (
	"fmt"
	"testing"

	"github.com/icereactor/reactor/location"
)

// BenchmarkAllow: what the deletion rule adds per file, against what the
// deletion paths already paid per file before it (the canonical spelling
// and the identity the history is compared by), in the same run: a table
// among 1,000 known ones, a data file four partition levels deep.
//
//	go test -run '^$' -bench Allow -benchmem -count 5 ./scope/
func BenchmarkAllow(b *testing.B) {
	var all []Roots
	metas := map[string]any{}
	for i := range 1000 {
		name := fmt.Sprintf("db.t%04d", i)
		m := meta(b, fmt.Sprintf("s3://lake/warehouse/db.db/t%04d", i), nil)
		metas[name] = m
		all = append(all, RootsOf(name, m))
	}
	k, err := NewKnown()
	if err != nil {
		b.Fatal(err)
	}
	k.Replace(all)
	self := meta(b, "s3://lake/warehouse/db.db/t0500", nil)
	c := k.Check("db.t0500", self)
	loc := "s3://lake/warehouse/db.db/t0500/data/a=1/b=2/c=3/d=4/00000-1-7e8f0c59-1c1b-4c5e-9a2e-5f4b9d7d1a2b-00001.parquet"
	b.Run("rule", func(b *testing.B) {
		for b.Loop() {
			if _, r := c.Allow(loc); r != nil {
				b.Fatal(r)
			}
		}
	})
	b.Run("before-the-rule", func(b *testing.B) {
		for b.Loop() {
			canonical, err := location.Canonical(loc)
			if err != nil {
				b.Fatal(err)
			}
			_ = location.Identity(canonical)
		}
	})
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			_ = k.Check("db.t0500", self)
		}
	})
}
