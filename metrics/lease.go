package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// leaseOwners exports, at scrape time, which replica owns each shard as
// this replica's view of the lease bucket shows it.
type leaseOwners struct {
	mu     sync.Mutex
	source func() map[int]string
	desc   *prometheus.Desc
}

func newLeaseOwners() *leaseOwners {
	return &leaseOwners{desc: prometheus.NewDesc("reactor_lease_owner",
		"1 for the replica that holds each shard's table lease, as this replica sees the lease bucket.",
		[]string{"shard", "replica"}, nil)}
}

func (g *leaseOwners) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *leaseOwners) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	source := g.source
	g.mu.Unlock()
	if source == nil {
		return
	}
	for shard, replica := range source() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, 1, strconv.Itoa(shard), replica)
	}
}

// SetLeaseOwnerSource sets (nil: clears) where reactor_lease_owner comes
// from.
func (m *Metrics) SetLeaseOwnerSource(f func() map[int]string) {
	m.leaseOwners.mu.Lock()
	defer m.leaseOwners.mu.Unlock()
	m.leaseOwners.source = f
}
