package catalogs

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestHungCatalogOpenTimesOut: a catalog server that accepts connections
// and never answers fails the open at the catalog timeout, for every type
// that talks to a server. The SQL catalog opens its tables with
// context.Background (iceberg-go), so only the timeout's abandonment ends
// it: reactor is not held by it.
func TestHungCatalogOpenTimesOut(t *testing.T) {
	addr := hungServer(t)
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
	}{
		{"rest", iceberg.Properties{"type": "rest", "uri": "http://" + addr}},
		{"hive", iceberg.Properties{"type": "hive", "uri": "thrift://" + addr}},
		{"postgres", iceberg.Properties{"type": "sql", "uri": "jdbc:postgresql://" + addr + "/lake", "jdbc.user": "u"}},
		{"mysql", iceberg.Properties{"type": "sql", "uri": "jdbc:mysql://" + addr + "/lake", "jdbc.user": "u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := within(t, 10*time.Second, func() (*Catalog, error) {
				return Open(context.Background(), Config{Name: "lake", Props: tc.props, Timeout: 300 * time.Millisecond,
					Logger: slog.New(slog.DiscardHandler)})
			})
			if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "did not finish within 300ms") {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// hangingREST is a REST catalog endpoint that answers the config call and
// then takes every request without answering until the test ends.
func hangingREST(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/config" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
			return
		}
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL
}

// TestHungCatalogCallsTimeOut: once open, a catalog that stops answering
// fails each call at the timeout with ErrTimeout naming the call: a load,
// a commit, each step of a table listing, a namespace listing.
func TestHungCatalogCallsTimeOut(t *testing.T) {
	ctx := context.Background()
	cat, err := Open(ctx, Config{Name: "lake", Timeout: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": "rest", "uri": hangingREST(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ident := table.Identifier{"db", "t"}
	calls := []struct {
		op   string
		call func() error
	}{
		{"load db.t", func() error { _, err := cat.LoadTable(ctx, ident); return err }},
		{"commit to db.t", func() error { _, _, err := cat.CommitTable(ctx, ident, nil, nil); return err }},
		{"list tables of db", func() error {
			for _, err := range cat.ListTables(ctx, table.Identifier{"db"}) {
				return err
			}
			return nil
		}},
		{"list namespaces", func() error { _, err := cat.ListNamespaces(ctx, nil); return err }},
		{"check db.t", func() error { _, err := cat.CheckTableExists(ctx, ident); return err }},
	}
	for _, c := range calls {
		_, err := within(t, 10*time.Second, func() (struct{}, error) { return struct{}{}, c.call() })
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), c.op+" did not finish within 300ms") {
			t.Errorf("%s: err = %v, want ErrTimeout naming the call", c.op, err)
		}
	}
}

// TestCallerDeadlineIsNotTheCatalogs: a call ended by its caller's own
// deadline (shorter than the catalog timeout) returns the caller's
// error, not ErrTimeout: the catalog is not blamed for it.
func TestCallerDeadlineIsNotTheCatalogs(t *testing.T) {
	cat, err := Open(context.Background(), Config{Name: "lake", Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": "rest", "uri": hangingREST(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = within(t, 10*time.Second, func() (*table.Table, error) { return cat.LoadTable(ctx, table.Identifier{"db", "t"}) })
	if err == nil || errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline, not ErrTimeout", err)
	}
}
