package worker

// The metrics and probe endpoints, and the status pages beside them or on
// a listener of their own.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"

	"github.com/icereactor/reactor/status"
)

// StatusOff, as Config.StatusAddr, serves no status pages.
const StatusOff = "off"

// HTTPLimits bound what one client can hold of an HTTP listener. The zero
// value takes every default.
type HTTPLimits struct {
	// ReadHeader bounds the wait for a request's headers (default 5s): a
	// client that connects and sends nothing is dropped after it.
	ReadHeader time.Duration
	// Read bounds reading a whole request (default 10s; the endpoints take
	// no body).
	Read time.Duration
	// Write bounds a response, from the end of the request's headers
	// (default 60s, above the table page's read of a table): a client that
	// reads nothing is dropped after it.
	Write time.Duration
	// Idle bounds a kept-alive connection between requests (default 60s).
	Idle time.Duration
	// Conns bounds the connections one listener holds at once (default
	// 256 for /metrics and the probes, 64 for the status pages); more wait
	// in the kernel's backlog.
	Conns int
}

// Defaults of HTTPLimits.
const (
	DefaultHTTPReadHeaderTimeout = 5 * time.Second
	DefaultHTTPReadTimeout       = 10 * time.Second
	DefaultHTTPWriteTimeout      = 60 * time.Second
	DefaultHTTPIdleTimeout       = 60 * time.Second
	defaultMetricsConns          = 256
	defaultStatusConns           = 64
	// maxHeaderBytes: a probe's or a browser's headers fit many times.
	maxHeaderBytes = 64 << 10
)

func (l HTTPLimits) withDefaults(conns int) HTTPLimits {
	if l.ReadHeader <= 0 {
		l.ReadHeader = DefaultHTTPReadHeaderTimeout
	}
	if l.Read <= 0 {
		l.Read = DefaultHTTPReadTimeout
	}
	if l.Write <= 0 {
		l.Write = DefaultHTTPWriteTimeout
	}
	if l.Idle <= 0 {
		l.Idle = DefaultHTTPIdleTimeout
	}
	if l.Conns <= 0 {
		l.Conns = conns
	}
	return l
}

// HTTPAddr is the address the metrics and probe endpoints listen on ("" if
// none).
func (w *Worker) HTTPAddr() string { return w.httpAddr }

// StatusAddr is the address the status pages are served on: HTTPAddr when
// they share its listener, "" when they are off.
func (w *Worker) StatusAddr() string { return w.statusAddr }

// Ready reports whether the worker can do its work: connected to NATS,
// allowed to take tables (its replica name not held by another live
// process) and able to reach the catalog, as the background check last
// found it (it never calls the catalog itself; before the first check has
// answered it waits for it, within ctx).
func (w *Worker) Ready(ctx context.Context) error {
	if conn, _, _ := w.link(); conn == nil || !conn.IsConnected() {
		return errors.New("not connected to NATS")
	}
	if m := w.leaseManager(); m != nil {
		if err := m.Refused(); err != nil {
			return fmt.Errorf("holding no tables: %w", err)
		}
	}
	return w.readiness.err(ctx)
}

// serveHTTP starts the listeners: /metrics, /healthz and /readyz on
// cfg.HTTPAddr, with the status pages beside them or on cfg.StatusAddr.
func (w *Worker) serveHTTP(cfg Config) error {
	pages := status.Handler(w.Status(), status.Options{})
	if cfg.StatusTokenFile != "" {
		auth, err := newTokenAuth(cfg.StatusTokenFile)
		if err != nil {
			return err
		}
		pages = auth.wrap(pages, w.Metrics, w.log)
	}
	probes := w.Metrics.Handler(w.Ready)
	metricsMux := http.NewServeMux()
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		metricsMux.Handle(p, probes)
	}
	separate := cfg.StatusAddr != "" && cfg.StatusAddr != StatusOff
	if cfg.HTTPAddr != "" {
		if !separate && cfg.StatusAddr != StatusOff {
			metricsMux.Handle("/", pages)
		}
		srv, addr, err := w.listen(cfg.HTTPAddr, metricsMux, cfg.HTTPLimits.withDefaults(defaultMetricsConns), "metrics")
		if err != nil {
			return err
		}
		w.httpAddr = addr
		if !separate && cfg.StatusAddr != StatusOff {
			w.statusAddr = addr
			w.log.Info("serving /metrics, /healthz, /readyz and the status pages", "addr", addr, "status_auth", cfg.StatusTokenFile != "")
		} else {
			w.log.Info("serving /metrics, /healthz and /readyz", "addr", addr)
		}
		w.servers = append(w.servers, srv)
	}
	if separate {
		srv, addr, err := w.listen(cfg.StatusAddr, pages, cfg.HTTPLimits.withDefaults(defaultStatusConns), "status pages")
		if err != nil {
			return err
		}
		w.statusAddr = addr
		w.servers = append(w.servers, srv)
		w.log.Info("serving the status pages", "addr", addr, "status_auth", cfg.StatusTokenFile != "")
	}
	return nil
}

// listen serves h on addr under limits.
func (w *Worker) listen(addr string, h http.Handler, limits HTTPLimits, what string) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s for the %s: %w", addr, what, err)
	}
	srv := newHTTPServer(h, limits)
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		if err := srv.Serve(netutil.LimitListener(ln, limits.Conns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("HTTP listener stopped", "what", what, "error", err)
		}
	}()
	return srv, ln.Addr().String(), nil
}

// newHTTPServer is every listener's server: each timeout set, so no
// client holds a goroutine or a descriptor by sending or reading nothing.
func newHTTPServer(h http.Handler, l HTTPLimits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeader, ReadTimeout: l.Read, WriteTimeout: l.Write,
		IdleTimeout: l.Idle, MaxHeaderBytes: maxHeaderBytes}
}
