package worker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// freePort returns a loopback port nothing listens on (for a server that
// starts later).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// reactor started while its NATS server is down does not exit: it serves
// /healthz, says not ready on /readyz, logs that it is waiting, and once
// the server comes up it connects, becomes ready and consumes events.
func TestStartBeforeNATS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	port := freePort(t)
	props, err := embedded.CatalogProperties(dir + "/catalog")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := embedded.OpenCatalog(ctx, dir+"/catalog")
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "events"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := thresholds.Parse([]byte(testThresholds))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	h := &harness{t: t, logs: logs}
	w, err := Start(ctx, Config{
		NATSURL:    "nats://127.0.0.1:" + strconv.Itoa(port),
		DataDir:    dir,
		Catalog:    catalogs.Config{Name: "reactor", Props: props},
		Thresholds: cfg,
		HTTPAddr:   "127.0.0.1:0",
		Logger:     slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatalf("start with NATS down: %v", err)
	}
	defer w.Close()
	base := "http://" + w.HTTPAddr()
	if got := httpStatus(t, base+"/healthz"); got != http.StatusOK {
		t.Errorf("/healthz while waiting for NATS: %d, want 200", got)
	}
	if got := httpStatus(t, base+"/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while waiting for NATS: %d, want 503", got)
	}
	if w.Connected() {
		t.Fatal("connected to a NATS server that is not running")
	}
	if n := strings.Count(logs.String(), "NATS is not reachable; waiting for it"); n != 1 {
		t.Errorf("the waiting line was logged %d times, want once:\n%s", n, logs.String())
	}

	srv, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: dir + "/nats-late", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	h.eventually("ready once NATS is up", func() bool { return httpStatus(t, base+"/readyz") == http.StatusOK })
	if !strings.Contains(logs.String(), "connected to NATS; consuming events") {
		t.Errorf("no line says NATS was connected:\n%s", logs.String())
	}

	// Events now flow: a writer's commit event reaches the planner.
	conn, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		t.Fatal(err)
	}
	writer := streamwriter.New(cat, ident, func(ctx context.Context, ev events.CommitEvent) error {
		data, err := ev.Encode()
		if err != nil {
			return err
		}
		_, err = js.Publish(ctx, "iceberg.commits."+ev.Namespace+"."+ev.Table, data)
		return err
	})
	snap, err := writer.Commit(ctx, "a", 10)
	if err != nil {
		t.Fatal(err)
	}
	h.eventually("the commit event applied", func() bool {
		id, _ := w.Planner.TableCounters("db.events")
		return id == snap
	})
	w.Close() // before the server stops: a consumer drains through it
}

// A NATS server whose JetStream is not up (restarting, or not enabled yet)
// is waited for the same way: the consumer cannot be created, reactor
// retries, and connects once a server with JetStream answers there.
func TestStartWhileJetStreamIsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	port := freePort(t)
	plain, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go plain.Start()
	if !plain.ReadyForConnections(15 * time.Second) {
		t.Fatal("plain NATS server not ready")
	}
	if err := os.MkdirAll(dir+"/catalog", 0o755); err != nil {
		t.Fatal(err)
	}
	props, err := embedded.CatalogProperties(dir + "/catalog")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	h := &harness{t: t, logs: logs}
	w, err := Start(ctx, Config{
		NATSURL: "nats://127.0.0.1:" + strconv.Itoa(port), DataDir: dir, Catalog: catalogs.Config{Name: "reactor", Props: props},
		HTTPAddr: "127.0.0.1:0", Logger: slog.New(slog.NewJSONHandler(logs, nil)), DisableNotifications: true,
	})
	if err != nil {
		t.Fatalf("start with JetStream down: %v", err)
	}
	defer w.Close()
	base := "http://" + w.HTTPAddr()
	if got := httpStatus(t, base+"/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while JetStream is down: %d, want 503", got)
	}
	plain.Shutdown()
	plain.WaitForShutdown()
	srv, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: dir + "/nats", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	h.eventually("ready once JetStream is up", func() bool { return httpStatus(t, base+"/readyz") == http.StatusOK })
	w.Close()
}
