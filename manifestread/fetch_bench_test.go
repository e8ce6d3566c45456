package manifestread

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
)

// BenchmarkFetch reads the manifests a refresh of 50 new commits reads
// (the one manifest each commit added, 100 rows over 8 partitions in
// streamwriter's v2 table, as bench/soak writes them), one op per
// manifest: iceberg-go's FetchEntries (the peer) against Reader.Fetch
// with its schema cache warm; then the 50 snapshots' manifest lists,
// Snapshot.Manifests against Reader.ManifestList.
func BenchmarkFetch(b *testing.B) {
	ctx := b.Context()
	cat, err := embedded.OpenCatalog(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		b.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	for i := range 50 {
		if _, err := w.Commit(ctx, fmt.Sprintf("c%d", i%8), 100); err != nil {
			b.Fatal(err)
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		b.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var ms []iceberg.ManifestFile
	for _, snap := range tbl.Metadata().Snapshots() {
		list, err := snap.Manifests(fs)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range list {
			if m.SnapshotID() == snap.SnapshotID {
				ms = append(ms, m)
			}
		}
	}
	r := New(0)
	for _, c := range []struct {
		name  string
		fetch func(iceio.IO, iceberg.ManifestFile, bool) ([]iceberg.ManifestEntry, error)
	}{
		{"iceberg-go", func(fs iceio.IO, m iceberg.ManifestFile, d bool) ([]iceberg.ManifestEntry, error) {
			return m.FetchEntries(fs, d)
		}},
		{"manifestread", r.Fetch},
	} {
		b.Run("reader="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				entries, err := c.fetch(fs, ms[i%len(ms)], false)
				if err != nil || len(entries) == 0 {
					b.Fatalf("%d entries: %v", len(entries), err)
				}
				i++
			}
		})
	}
	snaps := tbl.Metadata().Snapshots()
	for _, c := range []struct {
		name string
		list func(iceio.IO, *table.Snapshot) ([]iceberg.ManifestFile, error)
	}{
		{"iceberg-go", func(fs iceio.IO, s *table.Snapshot) ([]iceberg.ManifestFile, error) { return s.Manifests(fs) }},
		{"manifestread", r.ManifestList},
	} {
		b.Run("list/reader="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ms, err := c.list(fs, &snaps[i%len(snaps)])
				if err != nil || len(ms) == 0 {
					b.Fatalf("%d manifests: %v", len(ms), err)
				}
				i++
			}
		})
	}
	if st := r.Stats(); st.Fallbacks != 0 || st.Compiles > 2 {
		b.Fatalf("stats %+v: want a compile for the manifests' schema and one for the lists', no fallback", st)
	}
}
