package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyFunc reports whether the process can do its work (connected to NATS
// and the catalog); a non-nil error says why not.
type ReadyFunc func(ctx context.Context) error

// Handler serves /metrics (Prometheus exposition of m's registry plus Go
// and process collectors and reactor_ready, which asks ready at each
// scrape; the first Handler's ready is the one asked), /healthz (the process is alive) and /readyz
// (ready answers nil within two seconds).
func (m *Metrics) Handler(ready ReadyFunc) http.Handler {
	m.registerRuntimeOnce.Do(func() {
		m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			newReadyGauge(ready))
	})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}
