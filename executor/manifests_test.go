package executor_test

import (
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/planner"
)

func dataManifestCount(t *testing.T, f *fixture) int {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range ms {
		if m.ManifestContent() == iceberg.ManifestContentData {
			n++
		}
	}
	return n
}

func allDataFiles(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	for _, c := range []string{"a", "b", "c"} {
		for p := range f.dataFiles(c) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// One manifest per streaming append becomes one per partition; the data
// files and rows are exactly what they were.
func TestRewriteManifestsClustersByPartition(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 30 {
		f.commit([]string{"a", "b", "c"}[i%3], 5)
	}
	if n := dataManifestCount(t, f); n != 30 {
		t.Fatalf("setup: %d manifests, want 30", n)
	}
	before, filesBefore := f.contents(), allDataFiles(t, f)
	j := f.job("")
	j.Kind = planner.KindRewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != planner.Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if n := dataManifestCount(t, f); n != 3 {
		t.Errorf("%d data manifests after the rewrite, want 3 (one per partition)", n)
	}
	if rep.ManifestsRewritten != 30 || rep.ManifestsAdded != 3 {
		t.Errorf("report: %d rewritten, %d added; want 30 and 3", rep.ManifestsRewritten, rep.ManifestsAdded)
	}
	if after := f.contents(); after.Total != before.Total {
		t.Errorf("rows %v after, %v before", after.Total, before.Total)
	}
	if files := allDataFiles(t, f); !slices.Equal(files, filesBefore) {
		t.Errorf("data files changed:\n%v\n%v", filesBefore, files)
	}
}

// A writer committing between the rewrite's planning and its commit costs a
// retry, and its manifest survives.
func TestRewriteManifestsRetriesConflicts(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 10 {
		f.commit([]string{"a", "b"}[i%2], 5)
	}
	f.icat.beforeNextCommits(func() { f.commit("c", 5) })
	j := f.job("")
	j.Kind = planner.KindRewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != planner.Succeeded || rep.Conflicts == 0 {
		t.Fatalf("outcome %v (err %v), conflicts %d; want success after a conflict", res.Outcome, res.Err, rep.Conflicts)
	}
	if got, want := f.contents().Total, f.writer.Written(); got != want {
		t.Errorf("table %v, written %v", got, want)
	}
}
