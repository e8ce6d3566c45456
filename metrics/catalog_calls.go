package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// catalogCalls reads the catalog's call counts (package catalogs counts
// them where every call passes) when Prometheus scrapes.
type catalogCalls struct {
	mu     sync.Mutex
	source func() map[string]int64
	desc   *prometheus.Desc
}

func newCatalogCalls() *catalogCalls {
	return &catalogCalls{desc: prometheus.NewDesc("reactor_catalog_calls_total",
		"Calls made to the catalog by kind (load: a table's metadata in full; locate: only current metadata locations, one SQL query for one table or the tables polled together; commit; list: namespaces and tables; other), answered or not.",
		[]string{"call"}, nil)}
}

func (c *catalogCalls) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *catalogCalls) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	source := c.source
	c.mu.Unlock()
	if source == nil {
		return
	}
	for call, n := range source() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), call)
	}
}

// SetCatalogCallSource sets (nil: clears) where reactor_catalog_calls_total
// comes from.
func (m *Metrics) SetCatalogCallSource(f func() map[string]int64) {
	m.catalogCalls.mu.Lock()
	defer m.catalogCalls.mu.Unlock()
	m.catalogCalls.source = f
}
