package manifestread

import (
	"fmt"
	"maps"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
)

// Real tables on the embedded SQLite catalog, written by iceberg-go's
// commit paths (appends, position deletes or deletion vectors, equality
// deletes) in format v1, v2 and v3: every manifest of every snapshot
// reads the same through Fetch as through iceberg-go.
func TestFetchReadsRealTablesAsIcebergGo(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := New(0)
	v3ListFallbacks := int64(0) // v3 lists of data manifests carry first row ids: iceberg-go reads them
	for _, version := range []string{"1", "2", "3"} {
		ident := table.Identifier{"db", "t" + version}
		props := iceberg.Properties{"format-version": version}
		if version != "1" {
			maps.Copy(props, streamwriter.MergeOnReadProperties)
		}
		if _, err := streamwriter.CreateTable(ctx, cat, ident, props); err != nil {
			t.Fatal(err)
		}
		w := streamwriter.New(cat, ident, nil)
		for i := range 6 {
			if _, err := w.Commit(ctx, fmt.Sprintf("c%d", i%3), 20); err != nil {
				t.Fatal(err)
			}
		}
		if version != "1" {
			if _, err := w.DeleteRows(ctx, 1, 2, 25); err != nil {
				t.Fatalf("v%s: delete rows: %v", version, err)
			}
			if _, err := w.DeleteKeys(ctx, 3, 26); err != nil {
				t.Fatalf("v%s: delete keys: %v", version, err)
			}
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(tbl.Metadata().Version()); got != version {
			t.Fatalf("table created as v%s, want v%s", got, version)
		}
		fs, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		contents := map[iceberg.ManifestContent]int{}
		for _, snap := range tbl.Metadata().Snapshots() {
			ms, err := snap.Manifests(fs)
			if err != nil {
				t.Fatal(err)
			}
			before := r.Stats().Fallbacks
			listed, err := r.ManifestList(fs, &snap)
			if err != nil {
				t.Fatal(err)
			}
			sameManifests(t, fmt.Sprintf("v%s %s", version, snap.ManifestList), ms, listed)
			if fell := r.Stats().Fallbacks - before; fell != 0 && version != "3" {
				t.Errorf("v%s: the manifest list %s fell back to iceberg-go", version, snap.ManifestList)
			} else if fell != 0 {
				v3ListFallbacks++
			}
			for _, m := range ms {
				want, err := m.FetchEntries(fs, false)
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.Fetch(fs, m, false)
				if err != nil {
					t.Fatal(err)
				}
				sameEntries(t, fmt.Sprintf("v%s %s", version, m.FilePath()), want, got)
				contents[m.ManifestContent()]++
			}
		}
		if contents[iceberg.ManifestContentData] == 0 || version != "1" && contents[iceberg.ManifestContentDeletes] == 0 {
			t.Errorf("v%s: manifests read by content %v: want data and (v2+) delete manifests", version, contents)
		}
	}
	if st := r.Stats(); st.Fallbacks != v3ListFallbacks {
		t.Errorf("%d reads fell back to iceberg-go, %d of them v3 manifest lists: a manifest fell back", st.Fallbacks, v3ListFallbacks)
	}
}
