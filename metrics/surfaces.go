package metrics

import "github.com/prometheus/client_golang/prometheus"

// Surfaces are the collectors of reactor's hardened surfaces: the status
// pages' credential, NATS streams at their limits, unknown table names,
// object-store timeouts and size limits.
type Surfaces struct {
	// StatusRefused counts status page requests refused for their
	// credentials, by reason (no_credentials, wrong_token).
	StatusRefused *prometheus.CounterVec
}

func newSurfaces() Surfaces {
	return Surfaces{
		StatusRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_status_requests_refused_total",
			Help: "Status page requests refused for their credentials (--status-token-file), by reason: no_credentials, wrong_token.",
		}, []string{"reason"}),
	}
}

func (s Surfaces) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.StatusRefused}
}

func (s Surfaces) startAtZero() {
	for _, reason := range []string{"no_credentials", "wrong_token"} {
		s.StatusRefused.WithLabelValues(reason)
	}
}
