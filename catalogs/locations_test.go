package catalogs_test

import (
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
)

// MetadataLocations reads the current metadata file of many tables in one
// call per namespace: every table of a namespace it has learnt (one of its
// tables loaded once), each with the file the catalog names now; a table
// in a namespace never loaded and one that does not exist are left out for
// the caller to ask about one by one.
func TestMetadataLocations(t *testing.T) {
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
	loaded := []table.Identifier{{"db", "a"}, {"db", "b"}, {"db", "c"}, {"other", "x"}, {"deep", "ns", "y"}}
	notLoaded := []table.Identifier{{"db", "d"}, {"fresh", "z"}}
	writers := map[string]*streamwriter.Writer{}
	for _, id := range append(append([]table.Identifier{}, loaded...), notLoaded...) {
		if _, err := streamwriter.CreateTable(ctx, writerCat, id, nil); err != nil {
			t.Fatal(err)
		}
		writers[tablename.Format(id)] = streamwriter.New(writerCat, id, nil)
	}
	for _, id := range loaded {
		if _, err := c.LoadTable(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Commits after the loads: the answer is the catalog's file now.
	for _, id := range []table.Identifier{{"db", "b"}, {"deep", "ns", "y"}} {
		if _, err := writers[tablename.Format(id)].Commit(ctx, "a", 3); err != nil {
			t.Fatal(err)
		}
	}
	ask := append(append([]table.Identifier{}, loaded...), append(notLoaded, table.Identifier{"db", "missing"})...)
	before := c.CallCounts()
	got, err := c.MetadataLocations(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if calls := c.CallCounts()[catalogs.CallLocate] - before[catalogs.CallLocate]; calls != 3 {
		t.Errorf("%d location calls for 3 namespaces learnt", calls)
	}
	if n := c.CallCounts()[catalogs.CallLoad] - before[catalogs.CallLoad]; n != 0 {
		t.Errorf("%d loads", n)
	}
	answered := append(append([]table.Identifier{}, loaded...), table.Identifier{"db", "d"})
	if len(got) != len(answered) {
		t.Errorf("%d locations, want %d: %v", len(got), len(answered), got)
	}
	for _, id := range answered {
		want, err := writerCat.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if name := tablename.Format(id); got[name] != want.MetadataLocation() {
			t.Errorf("%s: %q, the catalog holds %q", name, got[name], want.MetadataLocation())
		}
	}
	if got, err := c.MetadataLocations(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("no tables: %v, %v", got, err)
	}
}
