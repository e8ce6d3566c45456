package catalogs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// eventually polls cond every 50 ms until it holds, failing the test after
// limit.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpenWaitingForACatalogThatIsDown: reactor run's catalog is down at
// start: the open returns at once, every call says the catalog is not
// reachable yet, which catalog and why; when the catalog comes up it is
// opened in the background and calls work; when it goes down and comes
// back, calls fail meanwhile and work again after.
func TestOpenWaitingForACatalogThatIsDown(t *testing.T) {
	ctx := context.Background()
	addr := closedPort(t)
	cat, err := within(t, 10*time.Second, func() (*Catalog, error) {
		return OpenWaiting(ctx, Config{Name: "hive", Timeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler),
			Props: iceberg.Properties{"type": "hive", "uri": "thrift://" + addr, "warehouse": "file://" + t.TempDir()}})
	})
	if err != nil {
		t.Fatalf("OpenWaiting with the catalog down: %v, want it to wait", err)
	}
	defer cat.Close()
	_, err = cat.LoadTable(ctx, table.Identifier{"db", "t"})
	if !errors.Is(err, ErrNotOpen) || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "hive catalog hive at thrift://"+addr) {
		t.Fatalf("a call before the catalog is up: err = %v, want ErrNotOpen with the catalog and the reason", err)
	}
	if _, err := cat.ListNamespaces(ctx, nil); !errors.Is(err, ErrNotOpen) {
		t.Fatalf("a listing before the catalog is up: err = %v, want ErrNotOpen", err)
	}

	hms := startFakeHMS(t, addr)
	answers := func() bool { _, err := cat.ListNamespaces(ctx, nil); return err == nil }
	eventually(t, 20*time.Second, "answering after the catalog came up", answers)
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, testSchema); err != nil {
		t.Fatal(err)
	}

	// Down again: calls fail with the catalog's error (it stays open), and
	// work again once it is back.
	hms.stop()
	if _, err := cat.LoadTable(ctx, table.Identifier{"db", "t"}); err == nil || errors.Is(err, ErrNotOpen) {
		t.Fatalf("a load with the catalog down: err = %v, want the catalog's error", err)
	}
	startFakeHMS(t, addr)
	eventually(t, 20*time.Second, "answering after the catalog came back", answers)
}

// TestOpenFailsAtOnce: the one-shot commands' Open does not wait: a
// catalog that is down is an error naming it.
func TestOpenFailsAtOnce(t *testing.T) {
	addr := closedPort(t)
	_, err := within(t, 10*time.Second, func() (*Catalog, error) {
		return Open(context.Background(), Config{Name: "lake", Logger: slog.New(slog.DiscardHandler),
			Props: iceberg.Properties{"uri": "http://" + addr}})
	})
	if err == nil || errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "open rest catalog lake at http://"+addr) {
		t.Fatalf("err = %v, want the open's error naming the catalog", err)
	}
}

// TestEmbeddedCatalogThroughTheWrapper: the embedded catalog opens under
// the same wrapper; a table loaded from it commits through it.
func TestEmbeddedCatalogThroughTheWrapper(t *testing.T) {
	ctx := context.Background()
	cat, err := Open(ctx, Config{EmbeddedDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	next, err := setProperty(ctx, tbl, "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	if next.Properties()["k"] != "v" {
		t.Fatalf("committed table lacks the property: %v", next.Properties())
	}
	cat.Close()
	if _, err := cat.LoadTable(ctx, table.Identifier{"db", "t"}); !errors.Is(err, ErrNotOpen) {
		t.Fatalf("a call after Close: err = %v, want ErrNotOpen", err)
	}
}
