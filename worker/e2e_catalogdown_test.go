package worker

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/metrics"
)

// reactor started while its catalog is down does not exit: it starts,
// serves /healthz, answers /readyz with 503 and the reason, exports
// reactor_catalog_reachable 0, and keeps trying. (The catalog coming up
// later, and reactor then compacting, is shown against a real PostgreSQL
// in the real-catalogs suite, realcatalogs/.)
func TestStartWithTheCatalogDown(t *testing.T) {
	ctx := context.Background()
	port := freePort(t)
	met := metrics.New()
	logs := &syncBuffer{}
	w, err := Start(ctx, Config{
		DataDir: t.TempDir(),
		Catalog: catalogs.Config{Name: "hms",
			Props: iceberg.Properties{"type": "hive", "uri": "thrift://127.0.0.1:" + strconv.Itoa(port)}},
		HTTPAddr:       "127.0.0.1:0",
		ReadinessEvery: 100 * time.Millisecond,
		Metrics:        met,
		Logger:         slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatalf("start with the catalog down: %v, want reactor to wait for it", err)
	}
	defer w.Close()
	base := "http://" + w.HTTPAddr()
	if got := httpStatus(t, base+"/healthz"); got != http.StatusOK {
		t.Errorf("/healthz while the catalog is down: %d, want 200", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "catalog unreachable") {
			if !strings.Contains(string(body), "connection refused") || !strings.Contains(string(body), "hive catalog hms at thrift://127.0.0.1:"+strconv.Itoa(port)) {
				t.Errorf("/readyz: %q, want the catalog and the reason", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q, want 503 naming the unreachable catalog", resp.StatusCode, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := testutil.ToFloat64(met.CatalogReachable); got != 0 {
		t.Errorf("reactor_catalog_reachable = %v, want 0", got)
	}
	if !strings.Contains(logs.String(), "catalog not reachable; waiting for it") {
		t.Errorf("no log line says reactor waits for the catalog:\n%s", logs.String())
	}
}
