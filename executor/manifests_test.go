package executor_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

func dataManifestCount(t testing.TB, f *fixture) int {
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

// perPartitionManifests is a target manifest size the tests' manifests do
// not fit in together, so a rewrite clusters them by partition.
var perPartitionManifests = iceberg.Properties{table.ManifestTargetSizeBytesKey: "32768"}

// One manifest per streaming append becomes one per partition when they
// do not fit in one manifest of the target size; the data files and rows
// are exactly what they were.
func TestRewriteManifestsClustersByPartition(t *testing.T) {
	// 30 manifests of a few KB each: over 32 KiB together, a partition's
	// ten entries well under it.
	f := newFixture(t, perPartitionManifests)
	for i := range 30 {
		f.commit([]string{"a", "b", "c"}[i%3], 5)
	}
	if n := dataManifestCount(t, f); n != 30 {
		t.Fatalf("setup: %d manifests, want 30", n)
	}
	before, filesBefore := f.contents(), allDataFiles(t, f)
	j := f.job("")
	j.Kind = jobkind.RewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != jobs.Succeeded {
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

// Manifests that fit in one of the target size together become one: the
// next rewrite is due after manifest_count appends, not manifest_count
// less the partitions.
func TestRewriteManifestsIntoOneWhenTheyFit(t *testing.T) {
	f := newFixture(t, nil) // the default target, 8 MiB
	for i := range 30 {
		f.commit([]string{"a", "b", "c"}[i%3], 5)
	}
	before, filesBefore := f.contents(), allDataFiles(t, f)
	j := f.job("")
	j.Kind = jobkind.RewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if n := dataManifestCount(t, f); n != 1 || rep.ManifestsRewritten != 30 || rep.ManifestsAdded != 1 {
		t.Errorf("%d data manifests after the rewrite (report: %d rewritten, %d added); want 1 from 30", n,
			rep.ManifestsRewritten, rep.ManifestsAdded)
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
	j.Kind = jobkind.RewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != jobs.Succeeded || rep.Conflicts == 0 {
		t.Fatalf("outcome %v (err %v), conflicts %d; want success after a conflict", res.Outcome, res.Err, rep.Conflicts)
	}
	if got, want := f.contents().Total, f.writer.Written(); got != want {
		t.Errorf("table %v, written %v", got, want)
	}
}

// unreferencedMetadata lists the Avro files under the table's metadata
// directory that no snapshot in its history references: what a commit
// attempt left behind.
func unreferencedMetadata(t *testing.T, f *fixture) []string {
	t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	referenced := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		referenced[strings.TrimPrefix(snap.ManifestList, "file://")] = true
		ms, err := snap.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			referenced[strings.TrimPrefix(m.FilePath(), "file://")] = true
		}
	}
	var out []string
	if err := walk(tbl.Location()+"/metadata", func(p string) {
		if strings.HasSuffix(p, ".avro") && !referenced[p] {
			out = append(out, p)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// After a lost race the merged manifests are reused, not merged again: the
// retry reads the new head's manifest list and nothing else, commits the
// merged manifests the first attempt wrote beside the writer's new one, and
// the losing attempt's manifest list is deleted.
func TestRewriteManifestsRetryReusesMergedManifests(t *testing.T) {
	f := newFixture(t, perPartitionManifests) // one manifest per partition
	for i := range 20 {
		f.commit([]string{"a", "b"}[i%2], 5)
	}
	counter := &countingIO{}
	f.icat.wrapFS = counter.wrap
	var mark int
	var retry []string
	f.icat.beforeNextCommits(func() { mark = counter.mark(); f.commit("c", 5) }, func() { retry = counter.since(mark) })
	j := f.job("")
	j.Kind = jobkind.RewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != jobs.Succeeded || rep.Attempts != 2 || rep.Conflicts != 1 {
		t.Fatalf("outcome %v (err %v) after %d attempts, %d conflicts; want success on the 2nd", res.Outcome, res.Err, rep.Attempts, rep.Conflicts)
	}
	tbl := f.load()
	if len(retry) != 1 || retry[0] != tbl.Metadata().SnapshotByID(*tbl.CurrentSnapshot().ParentSnapshotID).ManifestList {
		t.Errorf("the retry opened %v, want only the new head's manifest list", retry)
	}
	if n := dataManifestCount(t, f); n != 3 {
		t.Errorf("%d data manifests, want 3 (a and b merged, the writer's c)", n)
	}
	if rep.ManifestsRewritten != 20 || rep.ManifestsAdded != 2 {
		t.Errorf("report: %d rewritten, %d added; want 20 and 2", rep.ManifestsRewritten, rep.ManifestsAdded)
	}
	if got, want := f.contents().Total, f.writer.Written(); got != want {
		t.Errorf("table %v, written %v", got, want)
	}
	if left := unreferencedMetadata(t, f); len(left) != 0 {
		t.Errorf("files no snapshot references were left behind: %v", left)
	}
	if got := tbl.CurrentSnapshot().Summary.Properties["manifests-kept"]; got != "1" {
		t.Errorf("manifests-kept = %q, want 1 (the writer's manifest)", got)
	}
}

// A race that rewrites one of the manifests being merged (a copy-on-write
// delete rewrites the manifest holding the file it replaces) makes the
// retry merge again, and the first merge's manifests are deleted.
func TestRewriteManifestsMergesAgainWhenAReplacedManifestIsGone(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 20 {
		f.commit([]string{"a", "b"}[i%2], 5)
	}
	f.icat.beforeNextCommits(func() {
		if _, err := f.writer.DeleteRows(f.ctx, 3); err != nil {
			t.Error(err)
		}
	})
	j := f.job("")
	j.Kind = jobkind.RewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != jobs.Succeeded || rep.Attempts != 2 {
		t.Fatalf("outcome %v (err %v) after %d attempts; want success on the 2nd", res.Outcome, res.Err, rep.Attempts)
	}
	if got, want := f.contents().Total, f.writer.Written(); got != want {
		t.Errorf("table %v, written %v", got, want)
	}
	if left := unreferencedMetadata(t, f); len(left) != 0 {
		t.Errorf("files no snapshot references were left behind: %v", left)
	}
}

// Manifests that each mix two partitions cluster into two manifests again:
// two in, two out. That rewrite is not committed (the count would trigger
// the same rewrite after it), and the manifests it wrote are deleted.
func TestRewriteManifestsSkipsARewriteThatKeepsTheCount(t *testing.T) {
	// Two manifests of a few KB: together over 6,000 bytes.
	f := newFixture(t, iceberg.Properties{table.ManifestTargetSizeBytesKey: "6000"})
	for round := range 2 {
		appendMixed(t, f, int64(round*100+1), "a", "b")
	}
	if n := dataManifestCount(t, f); n != 2 {
		t.Fatalf("setup: %d manifests, want 2", n)
	}
	snap := f.load().CurrentSnapshot().SnapshotID
	j := f.job("")
	j.Kind = jobkind.RewriteManifests
	res, rep := f.exec.Run(f.ctx, j)
	if res.Outcome != jobs.Noop || rep.Commits != 0 {
		t.Fatalf("outcome %v (err %v), %d commits; want a no-op", res.Outcome, res.Err, rep.Commits)
	}
	if got := f.load().CurrentSnapshot().SnapshotID; got != snap {
		t.Errorf("a snapshot was committed: %d -> %d", snap, got)
	}
	if rep.StagedMetadataCleanedUp == 0 {
		t.Error("the manifests the abandoned rewrite wrote were not deleted")
	}
}

// appendMixed appends one row per category in one snapshot (one manifest
// holding every category).
func appendMixed(t *testing.T, f *fixture, firstID int64, categories ...string) {
	t.Helper()
	tbl := f.load()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, c := range categories {
		id := firstID + int64(i)
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(c)
		b.Field(2).(*array.StringBuilder).Append(streamwriter.Payload(id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if _, err := tbl.Append(f.ctx, rdr, nil); err != nil {
		t.Fatal(err)
	}
}
