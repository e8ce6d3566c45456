package catalogs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/beltran/gohive/hive_metastore"

	"github.com/icereactor/reactor/conflict"
)

// openFakeHive opens a hive catalog through package catalogs on the fake
// Metastore at addr, with a file warehouse.
func openFakeHive(t *testing.T, addr string, timeout time.Duration) *Catalog {
	t.Helper()
	cat, err := Open(context.Background(), Config{Name: "hive", Timeout: timeout, Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": "hive", "uri": "thrift://" + addr, "warehouse": "file://" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}

var testSchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})

// setProperty commits one table property through the table's own
// transaction (the catalog the table was loaded from).
func setProperty(ctx context.Context, tbl *table.Table, k, v string) (*table.Table, error) {
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{k: v}); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

// TestHiveConcurrentCalls: 16 goroutines share one hive catalog, each
// loading, listing and committing at once, with no error. iceberg-go's own
// Metastore client is one thrift connection without a lock: two calls at
// once interleave ("wrong method name") and later calls hang. The real
// Metastore is driven the same way for 60 s in the real-catalogs suite.
func TestHiveConcurrentCalls(t *testing.T) {
	ctx := context.Background()
	hms := startFakeHMS(t, "127.0.0.1:0")
	cat := openFakeHive(t, hms.addr, 10*time.Second)
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, table.Identifier{"db", "shared"}, testSchema); err != nil {
		t.Fatal(err)
	}
	const workers = 16
	stop := time.Now().Add(3 * time.Second)
	errs := make(chan error, workers)
	counts := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				own := table.Identifier{"db", fmt.Sprintf("t%d", w)}
				tbl, err := cat.CreateTable(ctx, own, testSchema)
				if err != nil {
					return err
				}
				for i := 0; time.Now().Before(stop); i++ {
					if _, err := cat.LoadTable(ctx, table.Identifier{"db", "shared"}); err != nil {
						return fmt.Errorf("load: %w", err)
					}
					if tbl, err = setProperty(ctx, tbl, "n", fmt.Sprint(i)); err != nil {
						return fmt.Errorf("commit: %w", err)
					}
					if _, err := cat.CheckNamespaceExists(ctx, table.Identifier{"db"}); err != nil {
						return fmt.Errorf("check namespace: %w", err)
					}
					counts[w]++
				}
				got, err := cat.LoadTable(ctx, own)
				if err != nil {
					return err
				}
				if n := got.Properties()["n"]; n != fmt.Sprint(counts[w]-1) {
					return fmt.Errorf("%s: property n = %q after %d commits", own, n, counts[w])
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	n := 0
	for _, err := range cat.ListTables(ctx, table.Identifier{"db"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != workers+1 {
		t.Errorf("listed %d tables, want %d", n, workers+1)
	}
	t.Logf("%d rounds of load, commit and namespace check by %d goroutines", total, workers)
}

// waitFor waits until the fake announces a held call of method.
func waitFor(t *testing.T, hms *fakeHMS, method string) {
	t.Helper()
	for {
		select {
		case m := <-hms.waiting:
			if m == method {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s reached the Metastore", method)
		}
	}
}

// TestHiveReconnectsAfterACut: the Metastore's connections are closed in
// the middle of a call (a restart, a network fault). A read is made again
// on a new connection and answers; a change (alter_table, whose outcome
// is unknown) fails, and the next one works on a new connection.
func TestHiveReconnectsAfterACut(t *testing.T) {
	ctx := context.Background()
	hms := startFakeHMS(t, "127.0.0.1:0")
	cat := openFakeHive(t, hms.addr, 10*time.Second)
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	tbl, err := cat.CreateTable(ctx, ident, testSchema)
	if err != nil {
		t.Fatal(err)
	}

	// A read cut mid-call is made again on a new connection.
	hms.hold("get_table")
	loaded := make(chan error, 1)
	go func() {
		_, err := cat.LoadTable(ctx, ident)
		loaded <- err
	}()
	waitFor(t, hms, "get_table")
	before := hms.callsOf("get_table")
	hms.cut()
	waitFor(t, hms, "get_table") // the same load, again, on a new connection
	hms.release("get_table")
	select {
	case err := <-loaded:
		if err != nil {
			t.Fatalf("a load cut mid-call: %v, want it made again on a new connection", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the load cut mid-call never returned")
	}
	if got := hms.callsOf("get_table"); got != before+1 {
		t.Errorf("get_table calls %d after the cut, want %d (one more, on a new connection)", got, before+1)
	}

	// A change cut mid-call fails (its outcome is unknown, not a
	// conflict); the next works.
	hms.hold("alter_table")
	committed := make(chan error, 1)
	go func() {
		_, err := setProperty(ctx, tbl, "k", "cut")
		committed <- err
	}()
	waitFor(t, hms, "alter_table")
	hms.cut()
	select {
	case err := <-committed:
		if err == nil || conflict.Is(err) {
			t.Fatalf("a commit cut mid-call: err = %v, want a failure that is not a conflict", err)
		}
		t.Logf("the cut commit: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the commit cut mid-call never returned")
	}
	hms.release("alter_table")
	tbl, err = within(t, 10*time.Second, func() (*table.Table, error) { return cat.LoadTable(ctx, ident) })
	if err != nil {
		t.Fatalf("the next call after the cut: %v", err)
	}
	if _, err := setProperty(ctx, tbl, "after", "cut"); err != nil {
		t.Fatalf("a commit after the cut: %v", err)
	}
}

// TestHiveHungCallTimesOut: a Metastore that takes a call and never
// answers fails the call at the catalog timeout with ErrTimeout, and the
// connection it held is not reused: the next call answers.
func TestHiveHungCallTimesOut(t *testing.T) {
	ctx := context.Background()
	hms := startFakeHMS(t, "127.0.0.1:0")
	cat := openFakeHive(t, hms.addr, 500*time.Millisecond)
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := cat.CreateTable(ctx, ident, testSchema); err != nil {
		t.Fatal(err)
	}
	hms.hold("get_table")
	_, err := within(t, 10*time.Second, func() (*table.Table, error) { return cat.LoadTable(ctx, ident) })
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "load db.t did not finish within 500ms (the catalog timeout, --catalog-timeout)") {
		t.Fatalf("err = %v, want ErrTimeout naming the call and the timeout", err)
	}
	hms.release("get_table")
	if _, err := within(t, 10*time.Second, func() (*table.Table, error) { return cat.LoadTable(ctx, ident) }); err != nil {
		t.Fatalf("the call after a timeout: %v", err)
	}
}

// TestHiveMetastore4: a Metastore without get_table (Hive Metastore 4
// removed it) is refused at open with an error naming the version, a
// configuration error (reactor run exits with it rather than waiting).
func TestHiveMetastore4(t *testing.T) {
	hms := startFakeHMS(t, "127.0.0.1:0", "get_table")
	_, err := Open(context.Background(), Config{Name: "hive", Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": "hive", "uri": "thrift://" + hms.addr}})
	if !errors.Is(err, ErrHiveMetastoreVersion) || !errors.Is(err, ErrConfig) ||
		!strings.Contains(err.Error(), "does not know the call get_table") || !strings.Contains(err.Error(), "Hive Metastore 4") {
		t.Fatalf("err = %v, want ErrHiveMetastoreVersion naming get_table and Hive Metastore 4", err)
	}
	if _, err := OpenWaiting(context.Background(), Config{Name: "hive", Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": "hive", "uri": "thrift://" + hms.addr}}); !errors.Is(err, ErrHiveMetastoreVersion) {
		t.Fatalf("OpenWaiting: err = %v, want ErrHiveMetastoreVersion at once", err)
	}
}

// TestHiveLockHeldIsAConflict: a commit that cannot take the table's lock
// because another writer holds it is a conflict (package conflict), which
// the executor retries like any lost race; nothing was committed.
func TestHiveLockHeldIsAConflict(t *testing.T) {
	ctx := context.Background()
	hms := startFakeHMS(t, "127.0.0.1:0")
	cat := openFakeHive(t, hms.addr, 10*time.Second)
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	// Another writer takes the table's lock and keeps it.
	other := newHMSPool(hms.addr, 1)
	defer other.Close()
	name := "t"
	resp, err := other.Lock(ctx, &hive_metastore.LockRequest{Component: []*hive_metastore.LockComponent{{
		Type: hive_metastore.LockType_EXCLUSIVE, Level: hive_metastore.LockLevel_TABLE, Dbname: "db", Tablename: &name}}})
	if err != nil || resp.State != hive_metastore.LockState_ACQUIRED {
		t.Fatalf("the other writer's lock: %v %v", resp, err)
	}
	_, err = setProperty(ctx, tbl, "k", "v")
	if err == nil || !conflict.Is(err) || !strings.Contains(err.Error(), "failed to acquire lock") {
		t.Fatalf("commit while another writer holds the lock: err = %v, want a conflict", err)
	}
	if got, _ := cat.LoadTable(ctx, tbl.Identifier()); got.Properties()["k"] != "" {
		t.Fatal("the refused commit landed")
	}
	if err := other.Unlock(ctx, resp.Lockid); err != nil {
		t.Fatal(err)
	}
	if _, err := setProperty(ctx, tbl, "k", "v"); err != nil {
		t.Fatalf("commit after the lock was released: %v", err)
	}
}

// TestHiveFlatNamespaces: Hive has one level of namespaces; listing a
// database's children answers none (iceberg-go: "hierarchical namespace is
// not supported"), so that reactor's namespace walk (discovery, the
// location index) works.
func TestHiveFlatNamespaces(t *testing.T) {
	ctx := context.Background()
	hms := startFakeHMS(t, "127.0.0.1:0")
	cat := openFakeHive(t, hms.addr, 10*time.Second)
	for _, db := range []string{"a", "b"} {
		if err := cat.CreateNamespace(ctx, table.Identifier{db}, nil); err != nil {
			t.Fatal(err)
		}
	}
	top, err := cat.ListNamespaces(ctx, nil)
	if err != nil || len(top) != 2 {
		t.Fatalf("top level: %v %v", top, err)
	}
	for _, ns := range top {
		children, err := cat.ListNamespaces(ctx, ns)
		if err != nil || len(children) != 0 {
			t.Fatalf("children of %v: %v %v, want none", ns, children, err)
		}
	}
	if _, err := cat.ListNamespaces(ctx, table.Identifier{"a", "b"}); !errors.Is(err, catalog.ErrNoSuchNamespace) {
		t.Fatalf("a two-level parent: err = %v, want ErrNoSuchNamespace", err)
	}
}
