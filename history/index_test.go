package history_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/streamwriter"
)

type tbl struct {
	t     *testing.T
	ctx   context.Context
	cat   catalog.Catalog
	w     *streamwriter.Writer
	ident table.Identifier
}

func newTable(t *testing.T) *tbl {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	return &tbl{t: t, ctx: ctx, cat: cat, w: streamwriter.New(cat, ident, nil), ident: ident}
}

func (x *tbl) commit(n int) {
	x.t.Helper()
	for range n {
		if _, err := x.w.Commit(x.ctx, "a", 3); err != nil {
			x.t.Fatal(err)
		}
	}
}

func (x *tbl) load() (*table.Table, iceio.IO) {
	x.t.Helper()
	t, err := x.cat.LoadTable(x.ctx, x.ident)
	if err != nil {
		x.t.Fatal(err)
	}
	fs, err := t.FS(x.ctx)
	if err != nil {
		x.t.Fatal(err)
	}
	return t, fs
}

// expired is the table's metadata with every snapshot but the current one
// expired (staged, not committed).
func (x *tbl) expired() table.Metadata {
	x.t.Helper()
	t, _ := x.load()
	txn := t.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1), table.WithPostCommit(false)); err != nil {
		x.t.Fatal(err)
	}
	st, err := txn.StagedTable()
	if err != nil {
		x.t.Fatal(err)
	}
	return st.Metadata()
}

// A sync reads only what is new; removals report what went; a preview
// reports the same without changing the index, and add-only keeps
// counting what the table dropped.
func TestSyncIsIncremental(t *testing.T) {
	x := newTable(t)
	x.commit(4)
	tb, fs := x.load()
	idx := history.New(tb.Metadata().TableUUID().String())
	ch, err := idx.Sync(x.ctx, fs, tb.Metadata(), history.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ch.AddedSnapshots != 4 || ch.ReadLists != 4 || ch.ReadManifests != 4 || len(ch.Unlinked) != 0 {
		t.Fatalf("first sync %+v: want 4 snapshots, 4 lists and 4 manifests read", ch)
	}
	x.commit(1)
	tb, _ = x.load()
	if ch, err = idx.Sync(x.ctx, fs, tb.Metadata(), history.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if ch.AddedSnapshots != 1 || ch.ReadLists != 1 || ch.ReadManifests != 1 {
		t.Fatalf("second sync %+v: want only the new snapshot's list and manifest read", ch)
	}
	refs := idx.Len()
	post := x.expired()
	preview, err := idx.Sync(x.ctx, fs, post, history.SyncOptions{Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if idx.Len() != refs || idx.Snapshots() != 5 {
		t.Fatalf("a preview changed the index: %d refs, %d snapshots", idx.Len(), idx.Snapshots())
	}
	kept, err := idx.Sync(x.ctx, fs, post, history.SyncOptions{AddOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.Unlinked) != 0 || idx.Snapshots() != 5 {
		t.Fatalf("add-only sync unlinked %d, counts %d snapshots", len(kept.Unlinked), idx.Snapshots())
	}
	done, err := idx.Sync(x.ctx, fs, post, history.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Four manifest lists go; the manifests and data files all stay (the
	// current snapshot lists every manifest of a fast-appended table).
	if len(done.Unlinked) != 4 || len(preview.Unlinked) != 4 || idx.Snapshots() != 1 {
		t.Fatalf("removal unlinked %v (preview %v), %d snapshots left", done.Unlinked, preview.Unlinked, idx.Snapshots())
	}
	for _, f := range done.Unlinked {
		if f.Kind != history.ManifestList {
			t.Errorf("unlinked %s (%s): only manifest lists go", f.Path, f.Kind)
		}
	}
}

// A file that cannot be read fails the sync and leaves the index as it
// was; the metadata of another table is refused.
func TestSyncFailsWhole(t *testing.T) {
	x := newTable(t)
	x.commit(2)
	tb, fs := x.load()
	idx := history.New(tb.Metadata().TableUUID().String())
	if _, err := idx.Sync(x.ctx, fs, tb.Metadata(), history.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	x.commit(1)
	tb, _ = x.load()
	list := strings.TrimPrefix(tb.CurrentSnapshot().ManifestList, "file://")
	if err := os.Rename(list, list+".away"); err != nil {
		t.Fatal(err)
	}
	before := idx.Len()
	if _, err := idx.Sync(x.ctx, fs, tb.Metadata(), history.SyncOptions{}); err == nil {
		t.Fatal("a sync over a missing manifest list succeeded")
	}
	if idx.Len() != before || idx.Snapshots() != 2 {
		t.Fatalf("a failed sync changed the index: %d refs (was %d), %d snapshots", idx.Len(), before, idx.Snapshots())
	}
	if err := os.Rename(list+".away", list); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Sync(x.ctx, fs, tb.Metadata(), history.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	other := newTable(t)
	other.commit(1)
	ot, ofs := other.load()
	if _, err := idx.Sync(x.ctx, ofs, ot.Metadata(), history.SyncOptions{}); err == nil {
		t.Fatal("synced with another table's metadata")
	}
	ctx, cancel := context.WithTimeout(x.ctx, time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	fresh := history.New(tb.Metadata().TableUUID().String())
	if _, err := fresh.Sync(ctx, fs, tb.Metadata(), history.SyncOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sync with a done context: %v", err)
	}
}
