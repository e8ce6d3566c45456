package history_test

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/history"
)

// walked is every file a walk visited, in visiting order.
func walked(t *testing.T, x *tbl, snaps []table.Snapshot, opts history.WalkOptions) []history.File {
	t.Helper()
	_, fsys := x.load()
	var out []history.File
	if err := history.Walk(x.ctx, fsys, snaps, opts, func(f history.File) { out = append(out, f) }); err != nil {
		t.Fatalf("walk with %d readers: %v", opts.Readers, err)
	}
	return out
}

// A walk with readers visits exactly what the one-at-a-time walk does, in
// the same order (callers build sets, and the orphan guard's SkipManifest
// answers from earlier walks): over shared manifests, position deletes,
// a file removed whole (a DELETED entry), subsets of the snapshots and
// manifests skipped at random.
func TestWalkAheadVisitsWhatTheSequentialWalkDoes(t *testing.T) {
	x := newTable(t)
	x.commit(6)
	if _, err := x.w.DeleteRows(x.ctx, x.w.LiveIDs()[:4]...); err != nil {
		t.Fatal(err)
	}
	x.commit(3)
	if _, err := x.w.DeleteRows(x.ctx, x.w.LiveIDs()[1]); err != nil {
		t.Fatal(err)
	}
	x.commit(2)
	tb, _ := x.load()
	all := tb.Metadata().Snapshots()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 24 {
		snaps := all
		if trial%3 == 1 {
			lo := rng.IntN(len(all))
			snaps = all[lo:]
		}
		opts := history.WalkOptions{Deleted: trial%2 == 0}
		if trial%4 == 3 {
			skip := map[string]bool{}
			for _, f := range walked(t, x, all[:rng.IntN(len(all))], history.WalkOptions{}) {
				if f.Kind == history.Manifest && rng.IntN(2) == 0 {
					skip[f.Path] = true
				}
			}
			opts.SkipManifest = func(path string) bool { return skip[path] }
		}
		want := walked(t, x, snaps, opts)
		if len(want) == 0 {
			t.Fatalf("trial %d: the sequential walk visited nothing", trial)
		}
		for _, readers := range []int{2, 3, 16} {
			opts.Readers = readers
			if got := walked(t, x, snaps, opts); !slices.Equal(got, want) {
				t.Fatalf("trial %d, %d readers: visited\n%v\nwant\n%v", trial, readers, got, want)
			}
		}
	}
	with := walked(t, x, all, history.WalkOptions{Deleted: true, Readers: 4})
	without := walked(t, x, all, history.WalkOptions{Readers: 4})
	if len(with) <= len(without) {
		t.Errorf("DELETED entries visited %d files, live only %d: the table has no removed file to tell them apart", len(with), len(without))
	}
}

// A manifest that cannot be read fails the walk ahead with the same error
// as the sequential walk, and the walk returns (its readers with it).
func TestWalkAheadFailsOnAMissingManifest(t *testing.T) {
	x := newTable(t)
	x.commit(8)
	tb, fsys := x.load()
	snaps := tb.Metadata().Snapshots()
	ms, err := snaps[3].Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	victim := strings.TrimPrefix(ms[len(ms)-1].FilePath(), "file://")
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	for _, readers := range []int{0, 2, 16} {
		n := 0
		err := history.Walk(x.ctx, fsys, snaps, history.WalkOptions{Readers: readers}, func(history.File) { n++ })
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), victim) {
			t.Fatalf("%d readers: walk over a missing manifest: %v (visited %d)", readers, err, n)
		}
	}
}
