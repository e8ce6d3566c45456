package planner

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// A run of append snapshots applied from the newest one's manifest list
// (advanceAppends) must leave exactly the state the walk snapshot by
// snapshot leaves, with fast appends (every manifest still listed) and
// with merged ones (a later append carries an earlier one's entries into a
// manifest it wrote); and a commit that calls itself an append but removed
// files must send the run back to the walk, not be half applied.
func TestAppendRunMatchesTheWalk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
	}{
		{"fast appends", nil},
		{"merged appends", iceberg.Properties{table.ManifestMergeEnabledKey: "true", table.ManifestMinMergeCountKey: "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cat, err := embedded.OpenCatalog(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ident := table.Identifier{"db", "t"}
			props := maps.Clone(streamwriter.MergeOnReadProperties)
			maps.Copy(props, tc.props)
			if _, err := streamwriter.CreateTable(ctx, cat, ident, props); err != nil {
				t.Fatal(err)
			}
			w := streamwriter.New(cat, ident, nil)
			commit := func(category string, rows int) {
				t.Helper()
				if _, err := w.Commit(ctx, category, rows); err != nil {
					t.Fatal(err)
				}
			}
			load := func() *table.Table {
				t.Helper()
				tbl, err := cat.LoadTable(ctx, ident)
				if err != nil {
					t.Fatal(err)
				}
				return tbl
			}
			sz := fileSizes{small: 1 << 20, tiny: 1 << 10}
			one := &tableCounters{}
			walk := &tableCounters{walkEverySnapshot: true}

			commit("a", 10)
			commit("b", 4)
			base := load()
			for _, c := range []*tableCounters{one, walk} {
				if _, err := c.advance(ctx, base, sz); err != nil {
					t.Fatal(err)
				}
			}

			// The run: twelve appends over three partitions.
			for i := range 12 {
				commit([]string{"a", "b", "c"}[i%3], 1+i)
			}
			tbl := load()
			if tc.props != nil && countDataManifests(manifestsOf(t, tbl)) >= 12 {
				t.Fatalf("%d data manifests after 12 merged appends: the merge did not happen, so the test proves nothing about it",
					countDataManifests(manifestsOf(t, tbl)))
			}
			got, err := one.advance(ctx, tbl, sz)
			if err != nil {
				t.Fatal(err)
			}
			want, err := walk.advance(ctx, tbl, sz)
			if err != nil {
				t.Fatal(err)
			}
			if got.rebuilt || want.rebuilt {
				t.Fatalf("rebuilt (one list %v, walk %v): the run was not bridged", got.rebuilt, want.rebuilt)
			}
			if got.listsRead != 1 || want.listsRead != 12 {
				t.Errorf("manifest lists read: %d for the run, %d by the walk; want 1 and 12", got.listsRead, want.listsRead)
			}
			sameState(t, "after the run", one, walk, got, want)

			// A commit that removes files, labelled an append: the one-list
			// read must find its deleted entries and leave the run to the walk.
			commit("a", 3)
			tbl = load()
			var gone []iceberg.DataFile
			tasks, err := tbl.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				if task.File.Partition()[1000] == "b" {
					gone = append(gone, task.File)
				}
			}
			txn := tbl.NewTransaction()
			rw := txn.NewRewrite(iceberg.Properties{jobs.SnapshotJobProperty: "job-1"})
			for _, df := range gone {
				rw.DeleteFile(df)
			}
			if err := rw.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			tbl = relabelledAppend(t, load())
			if !appendsOnly([]*table.Snapshot{tbl.CurrentSnapshot()}) {
				t.Fatal("the relabelled snapshot is not seen as an append")
			}
			got, err = one.advance(ctx, tbl, sz)
			if err != nil {
				t.Fatal(err)
			}
			want, err = walk.advance(ctx, tbl, sz)
			if err != nil {
				t.Fatal(err)
			}
			if got.listsRead != 2 {
				t.Errorf("a run holding deleted entries read %d manifest lists; want the walk's 2", got.listsRead)
			}
			sameState(t, "after a mislabelled removal", one, walk, got, want)
			if pb := one.partitions["category=b"]; pb == nil || pb.DataFiles != 0 {
				t.Errorf("partition b after its files were removed: %+v; want no data file", pb)
			}
		})
	}
}

// relabelledAppend is tbl with its current snapshot's operation rewritten
// to "append", as a writer that mislabels its commits would leave it.
func relabelledAppend(t *testing.T, tbl *table.Table) *table.Table {
	t.Helper()
	raw, err := json.Marshal(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // snapshot ids are 64-bit
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	cur := strconv.FormatInt(tbl.CurrentSnapshot().SnapshotID, 10)
	for _, s := range doc["snapshots"].([]any) {
		snap := s.(map[string]any)
		if snap["snapshot-id"].(json.Number).String() == cur {
			snap["summary"].(map[string]any)["operation"] = string(table.OpAppend)
		}
	}
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil)
}

func manifestsOf(t *testing.T, tbl *table.Table) []iceberg.ManifestFile {
	t.Helper()
	fs, err := tbl.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// sameState fails unless two table states and their updates agree in every
// counter, last write included, and in what they report.
func sameState(t *testing.T, step string, a, b *tableCounters, sa, sb updateStats) {
	t.Helper()
	if a.snapshotID != b.snapshotID || a.dataManifests != b.dataManifests {
		t.Errorf("%s: snapshot %d, %d data manifests; the walk: %d, %d", step, a.snapshotID, a.dataManifests, b.snapshotID, b.dataManifests)
	}
	if len(a.partitions) != len(b.partitions) {
		t.Errorf("%s: %d partitions; the walk: %d", step, len(a.partitions), len(b.partitions))
	}
	for k, pb := range b.partitions {
		pa := a.partitions[k]
		if pa == nil || pa.Counters != pb.Counters {
			t.Errorf("%s: partition %s: %+v; the walk: %+v", step, k, pa, pb.Counters)
		}
	}
	if sa.snapshots != sb.snapshots || sa.ownSnapshotsOnly != sb.ownSnapshotsOnly {
		t.Errorf("%s: %d snapshots (own only %v); the walk: %d (%v)", step, sa.snapshots, sa.ownSnapshotsOnly, sb.snapshots, sb.ownSnapshotsOnly)
	}
	if !slices.Equal(slices.Sorted(slices.Values(sa.added)), slices.Sorted(slices.Values(sb.added))) {
		t.Errorf("%s: %d files added; the walk: %d", step, len(sa.added), len(sb.added))
	}
	if !maps.Equal(sa.changed, sb.changed) {
		t.Errorf("%s: partitions changed %v; the walk: %v", step, sa.changed, sb.changed)
	}
}
