package scenarios

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

// TestCatalogDownAtStart: reactor run starts while its catalog (a JDBC
// catalog on PostgreSQL) is down. It does not exit: /readyz answers 503
// naming the catalog and why, reactor_catalog_reachable is 0. PostgreSQL
// then starts; reactor opens the catalog by itself, becomes ready, and
// compacts a table written from then on, rows exact. Then PostgreSQL
// stops: reactor says so again and stays up; it is back, and so is
// reactor.
func TestCatalogDownAtStart(t *testing.T) {
	s := need(t)
	t.Parallel()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + itoa(port)
	uri := "jdbc:postgresql://" + addr + "/" + dbName
	wh := "file://" + filepath.Join(s.work, "warehouse-late")
	flags := []string{"--catalog-uri", uri, "--warehouse", wh, "--catalog-prop", "jdbc.user=" + dbUser,
		"--catalog-prop", "jdbc.password=" + dbPassword, "--catalog-timeout", "5s"}
	r := s.startReactor(t, "late", "late", flags, false)

	body := r.waitUnready(t, "catalog unreachable", time.Minute)
	if !strings.Contains(body, "connection refused") || !strings.Contains(body, "sql catalog late at postgres://") {
		t.Errorf("/readyz: %q, want the catalog and the reason", body)
	}
	if up := r.metric(t, "reactor_catalog_reachable", nil); up != 0 {
		t.Errorf("reactor_catalog_reachable = %v with the catalog down, want 0", up)
	}
	// A while down: still running.
	time.Sleep(5 * time.Second)
	if r.proc.exited() {
		t.Fatalf("reactor exited with its catalog down: %v\n%s", r.proc.waitErr, r.proc.tail(30))
	}

	_, pg, err := s.startPostgresOn(context.Background(), "postgres-late", port)
	if err != nil {
		t.Fatal(err)
	}
	r.waitReady(t, 3*time.Minute)
	if up := r.metric(t, "reactor_catalog_reachable", nil); up != 1 {
		t.Errorf("reactor_catalog_reachable = %v once ready, want 1", up)
	}

	ctx := context.Background()
	cat, err := catalogs.Open(ctx, catalogs.Config{Name: "late", Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"uri": uri, "warehouse": wh, "jdbc.user": dbUser, "jdbc.password": dbPassword}})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ident := table.Identifier{"db", "late"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.AppendOnly(cat, ident, func(ctx context.Context, ev events.CommitEvent) error {
		return r.publish(ctx, ev.Namespace, ev.Table, ev.SnapshotID)
	})
	for i := range 12 {
		if _, err := w.Commit(ctx, "c"+itoa(i%2), 10); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for r.jobs(t, "compact", "succeeded") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction after the catalog came up\n%s", r.proc.tail(40))
		}
		time.Sleep(time.Second)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	contents, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if contents.Total != w.Written() {
		t.Errorf("the table holds %v, the writer wrote %v", contents.Total, w.Written())
	}
	if failed := r.jobs(t, "", "failed"); failed != 0 {
		t.Errorf("%.0f jobs failed\n%s", failed, r.proc.tail(30))
	}

	// Down later: the readiness probe (every 15 s) notices.
	if err := pg.stop(time.Minute); err != nil {
		t.Fatalf("stopping PostgreSQL: %v", err)
	}
	r.waitUnready(t, "catalog unreachable", 2*time.Minute)
	if up := r.metric(t, "reactor_catalog_reachable", nil); up != 0 {
		t.Errorf("reactor_catalog_reachable = %v with the catalog down again, want 0", up)
	}
	if _, _, err := s.startPostgresOn(context.Background(), "postgres-late", port); err != nil {
		t.Fatal(err)
	}
	r.waitReady(t, 2*time.Minute)
	r.stop(t)
}
