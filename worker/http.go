package worker

// The metrics and probe endpoints, and the status pages beside them.

import (
	"context"
	"errors"
	"fmt"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/status"
	"net"
	"net/http"
	"time"
)

// HTTPAddr is the address the metrics and probe endpoints listen on ("" if
// none).
func (w *Worker) HTTPAddr() string { return w.httpAddr }

// Ready reports whether the worker can do its work: connected to NATS,
// allowed to take tables (its replica name not held by another live
// process) and able to reach the catalog.
func (w *Worker) Ready(ctx context.Context) error {
	if conn, _, _ := w.link(); conn == nil || !conn.IsConnected() {
		return errors.New("not connected to NATS")
	}
	if m := w.leaseManager(); m != nil {
		if err := m.Refused(); err != nil {
			return fmt.Errorf("holding no tables: %w", err)
		}
	}
	if _, err := w.Catalog.ListNamespaces(ctx, nil); err != nil {
		return fmt.Errorf("catalog unreachable: %w", redact.Error(err))
	}
	return nil
}

func (w *Worker) serveHTTP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s for metrics: %w", addr, err)
	}
	w.httpAddr = ln.Addr().String()
	w.http = &http.Server{Handler: w.httpHandler(), ReadHeaderTimeout: 5 * time.Second}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		if err := w.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("metrics endpoint stopped", "error", err)
		}
	}()
	w.log.Info("serving /metrics, /healthz, /readyz and the status pages", "addr", w.httpAddr)
	return nil
}

// httpHandler routes /metrics, /healthz and /readyz to the metrics
// handler and every other path to the status pages (package status), which
// read the worker's state on request and never change it.
func (w *Worker) httpHandler() http.Handler {
	probes := w.Metrics.Handler(w.Ready)
	mux := http.NewServeMux()
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		mux.Handle(p, probes)
	}
	mux.Handle("/", status.Handler(w.Status(), status.Options{}))
	return mux
}
