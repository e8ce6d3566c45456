package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// RefreshState is what the event path's coalescer reports at scrape time:
// per table, how long its oldest event not yet applied has waited (0: all
// applied); the events waiting for a refresh; the tables waiting for a
// refresh worker.
type RefreshState struct {
	Lag           map[string]float64
	PendingEvents int
	ReadyTables   int
}

// refreshGauges reads a RefreshState when Prometheus scrapes, so a lag
// keeps growing while a table's refresh is stuck.
type refreshGauges struct {
	mu     sync.Mutex
	source func() RefreshState

	lag, pending, ready *prometheus.Desc
}

func newRefreshGauges() *refreshGauges {
	return &refreshGauges{
		lag: prometheus.NewDesc("reactor_table_refresh_lag_seconds",
			"How long the table's oldest event not yet applied has waited (0: every event seen is applied).", []string{"table"}, nil),
		pending: prometheus.NewDesc("reactor_refresh_pending_events",
			"Events (and notification records) received and waiting for their table's refresh.", nil, nil),
		ready: prometheus.NewDesc("reactor_refresh_queue_tables",
			"Tables with events waiting for a free refresh worker.", nil, nil),
	}
}

func (g *refreshGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.lag
	ch <- g.pending
	ch <- g.ready
}

func (g *refreshGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	source := g.source
	g.mu.Unlock()
	if source == nil {
		return
	}
	st := source()
	for table, lag := range st.Lag {
		ch <- prometheus.MustNewConstMetric(g.lag, prometheus.GaugeValue, lag, table)
	}
	ch <- prometheus.MustNewConstMetric(g.pending, prometheus.GaugeValue, float64(st.PendingEvents))
	ch <- prometheus.MustNewConstMetric(g.ready, prometheus.GaugeValue, float64(st.ReadyTables))
}

// SetRefreshSource sets (nil: clears) where the refresh gauges come from.
func (m *Metrics) SetRefreshSource(f func() RefreshState) {
	m.refresh.mu.Lock()
	defer m.refresh.mu.Unlock()
	m.refresh.source = f
}
