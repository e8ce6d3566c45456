package catalogs_test

import (
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
)

// The metadata cache answers a load from memory only for the file the
// catalog says is current: a writer's commit through another process is
// seen at once, the commit reactor made is not parsed again, a table
// dropped and created again at the same location gets its own metadata,
// and two tables never share an entry.
func TestMetadataCacheIsNeverStale(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	writerCat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalogs.Open(ctx, catalogs.Config{EmbeddedDir: dir, MetadataCacheBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	a, b := table.Identifier{"db", "a"}, table.Identifier{"db", "nested.ns", "b"}
	writers := map[string]*streamwriter.Writer{}
	for _, id := range []table.Identifier{a, b} {
		if _, err := streamwriter.CreateTable(ctx, writerCat, id, nil); err != nil {
			t.Fatal(err)
		}
		writers[id[len(id)-1]] = streamwriter.New(writerCat, id, nil)
	}
	load := func(id table.Identifier) *table.Table {
		t.Helper()
		tbl, err := c.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	current := func(id table.Identifier) *table.Table {
		t.Helper()
		tbl, err := writerCat.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	same := func(what string, got, want *table.Table) {
		t.Helper()
		if got.MetadataLocation() != want.MetadataLocation() || got.Metadata().TableUUID() != want.Metadata().TableUUID() ||
			snapshotID(got) != snapshotID(want) {
			t.Fatalf("%s: loaded %s (snapshot %d), the catalog holds %s (snapshot %d)", what, got.MetadataLocation(), snapshotID(got),
				want.MetadataLocation(), snapshotID(want))
		}
	}
	for round := range 3 {
		for _, id := range []table.Identifier{a, b} {
			if _, err := writers[id[len(id)-1]].Commit(ctx, "x", 5); err != nil {
				t.Fatal(err)
			}
			before := c.CacheStats()
			same("after a writer's commit", load(id), current(id))
			same("loaded again", load(id), current(id))
			after := c.CacheStats()
			if round > 0 && after.Hits-before.Hits != 1 {
				t.Errorf("round %d, %v: %d loads from memory of two, want 1 (the unchanged file)", round, id, after.Hits-before.Hits)
			}
		}
	}
	// A commit reactor makes is the next load's, unparsed.
	tbl := load(a)
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{"x": "1"}); err != nil {
		t.Fatal(err)
	}
	committed, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := c.CacheStats()
	same("after reactor's own commit", load(a), committed)
	if got := c.CacheStats(); got.Hits-before.Hits != 1 || got.Misses != before.Misses {
		t.Errorf("the committed table was parsed again: %+v -> %+v", before, got)
	}
	// Dropped and created again: new files, new UUID, a fresh entry.
	old := load(a)
	if err := writerCat.DropTable(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := streamwriter.CreateTable(ctx, writerCat, a, nil); err != nil {
		t.Fatal(err)
	}
	again := load(a)
	same("recreated", again, current(a))
	if again.Metadata().TableUUID() == old.Metadata().TableUUID() {
		t.Error("the recreated table was answered with the dropped one's metadata")
	}
	if _, err := c.LoadTable(ctx, table.Identifier{"db", "missing"}); err == nil {
		t.Error("a table that does not exist loaded")
	}
}

func snapshotID(tbl *table.Table) int64 {
	if s := tbl.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// Without the metadata cache (the default) every load parses,
// and the polling safety net's cheap location still answers: the current
// file, then a writer's next one, without a load.
func TestLocationWithoutTheCache(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	writerCat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalogs.Open(ctx, catalogs.Config{EmbeddedDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	id := table.Identifier{"db", "a"}
	if _, err := streamwriter.CreateTable(ctx, writerCat, id, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(writerCat, id, nil)
	if _, err := w.Commit(ctx, "a", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MetadataLocation(ctx, id); err == nil {
		t.Fatal("a location before any load: the locator learns the namespace from a load")
	}
	for range 2 {
		if _, err := c.LoadTable(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.CacheStats(); st.Hits != 0 || st.Misses != 0 {
		t.Errorf("cache stats %+v without a cache", st)
	}
	if _, err := w.Commit(ctx, "a", 5); err != nil {
		t.Fatal(err)
	}
	want, err := writerCat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	loads := c.CallCounts()[catalogs.CallLoad]
	got, err := c.MetadataLocation(ctx, id)
	if err != nil || got != want.MetadataLocation() {
		t.Errorf("location %q, %v; the catalog holds %q", got, err, want.MetadataLocation())
	}
	if n := c.CallCounts()[catalogs.CallLoad]; n != loads {
		t.Errorf("%d loads to locate", n-loads)
	}
}
