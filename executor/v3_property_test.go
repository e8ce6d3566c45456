package executor_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// The v3 position-delete rewrite as a property: on random tables written as
// v2 (appends, position deletes), upgraded to v3, deleted from again
// (deletion vectors), then broken the ways a careless writer breaks them —
// a data file removed without its vector (dangling), second vectors for
// data files that have one (duplicates) — one run of the job leaves a table
// that reads exactly what the broken table meant (its rows before the
// duplicates, less the rows they delete), every row with the lineage it had,
// at most one vector per data file, none dangling, no Parquet position
// delete; and a second run finds nothing.
func TestV3PositionDeleteRewriteProperty(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { v3PropertyRun(t, seed) })
	}
}

func v3PropertyRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 25))
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	cats := []string{"a", "b"}
	var ops []string
	live := func() []int64 { return slices.Sorted(maps.Keys(f.contents().IDs)) }
	pick := func(n int) []int64 {
		ids := live()
		var out []int64
		for range min(n, len(ids)) {
			out = append(out, ids[rng.IntN(len(ids))])
		}
		return out
	}
	write := func(n int) {
		for range n {
			if rng.IntN(3) < 2 {
				c, rows := cats[rng.IntN(2)], 5+rng.IntN(40)
				f.commit(c, rows)
				ops = append(ops, fmt.Sprintf("append %s %d", c, rows))
				continue
			}
			if ids := pick(1 + rng.IntN(4)); len(ids) > 0 {
				if _, err := f.writer.DeleteRows(f.ctx, ids...); err != nil {
					t.Fatal(err)
				}
				ops = append(ops, fmt.Sprintf("delete %v", ids))
			}
		}
	}
	f.commit("a", 30)
	write(2 + rng.IntN(5))
	if err := upgradeToV3(f.ctx, f.cat, ident); err != nil {
		t.Fatal(err)
	}
	ops = append(ops, "upgrade")
	write(rng.IntN(5))
	if rng.IntN(2) == 0 {
		files := slices.Sorted(maps.Keys(f.dataFiles("a")))
		if len(files) > 1 {
			path := files[rng.IntN(len(files))]
			v3DropDataFile(t, f, path)
			ops = append(ops, "drop a data file of a")
		}
	}
	want, lineage := f.contents(), v3RowLineage(t, f)
	nextRowID := f.load().Metadata().NextRowID()
	// Duplicates: a second vector for the data files of a few live rows,
	// among the files that have one. (A first vector that leaves the
	// file's Parquet position deletes out changes what the table reads,
	// by the spec's reader rule: not a duplicate, and the job keeps it.)
	hasDV := map[string]bool{}
	for _, d := range v3DVs(t, f) {
		hasDV[d.ref] = true
	}
	bFiles := f.dataFiles("b")
	dupIDs := pick(rng.IntN(8))
	loc := pdmLocate(t, f, dupIDs...)
	for _, id := range slices.Compact(slices.Sorted(slices.Values(dupIDs))) {
		if !hasDV[loc[id].Path] {
			continue
		}
		cat := "a"
		if bFiles[loc[id].Path] > 0 {
			cat = "b"
		}
		v3CommitDeletes(t, f, v3WriteDV(t, f, cat, loc[id].Path, loc[id].Pos))
		want = v3Without(want, cat, id)
		lineage = v3LineageWithout(lineage, id)
		ops = append(ops, fmt.Sprintf("duplicate vector deleting %d", id))
	}

	t.Logf("ops: %v", ops)
	res, _ := f.exec.Run(f.ctx, pdmJob(f, "", "a", "b"))
	if res.Outcome == jobs.Failed || res.Outcome == jobs.GaveUp {
		t.Fatalf("job: %v %v\nops: %v", res.Outcome, res.Err, ops)
	}
	sameContents(t, fmt.Sprintf("after the job (ops %v)", ops), want, f.contents())
	if got := v3RowLineage(t, f); !maps.Equal(got, lineage) {
		t.Errorf("row lineage changed (ops %v):\n got %v\nwant %v", ops, got, lineage)
	}
	for _, p := range v3RuleBreaks(t, f.ctx, f.load()) {
		t.Errorf("%s (ops %v)", p, ops)
	}
	if res.Outcome == jobs.Succeeded {
		if got := f.load().Metadata().NextRowID(); got != nextRowID {
			t.Errorf("next-row-id %d after the job, want %d", got, nextRowID)
		}
	}
	if again, _ := f.exec.Run(f.ctx, pdmJob(f, "", "a", "b")); again.Outcome != jobs.Noop {
		t.Errorf("second run: %v %v, want noop (ops %v)", again.Outcome, again.Err, ops)
	}
}
