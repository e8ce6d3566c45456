package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// readyTimeout bounds a readiness check made for a scrape, as for /readyz.
const readyTimeout = 2 * time.Second

// readyGauge exports /readyz's answer as reactor_ready at scrape time, so
// an alert sees a replica that serves /metrics but cannot work (NATS
// disconnected, catalog unreachable, replica name refused) without a
// Kubernetes probe in between. The worker's answer is state it keeps fresh
// in the background: a scrape calls no dependency.
type readyGauge struct {
	ready ReadyFunc
	desc  *prometheus.Desc
}

func newReadyGauge(ready ReadyFunc) *readyGauge {
	return &readyGauge{ready: ready, desc: prometheus.NewDesc("reactor_ready",
		"1 when the process can do its work (what /readyz answers: connected to NATS, replica name not refused, catalog answering its background check), 0 otherwise.",
		nil, nil)}
}

func (g *readyGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect has no context of its own: the check gets readyTimeout, within
// Prometheus's default scrape timeout.
func (g *readyGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	v := 0.0
	if g.ready(ctx) == nil {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
}
