package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// snapshotGauges exports each table's snapshot count and the age of its
// oldest snapshot. The age is computed when Prometheus scrapes, so it keeps
// growing while no event arrives instead of freezing at the last update.
type snapshotGauges struct {
	mu     sync.Mutex
	tables map[string]snapshotStat
	now    func() time.Time

	count, age *prometheus.Desc
}

type snapshotStat struct {
	count  int
	oldest time.Time // zero: no snapshot
}

func newSnapshotGauges() *snapshotGauges {
	return &snapshotGauges{
		tables: map[string]snapshotStat{},
		now:    time.Now,
		count: prometheus.NewDesc("reactor_table_snapshots",
			"Snapshots in the table's metadata, as last seen by the planner.", []string{"table"}, nil),
		age: prometheus.NewDesc("reactor_table_oldest_snapshot_age_seconds",
			"Age of the table's oldest snapshot at scrape time (0 without snapshots).", []string{"table"}, nil),
	}
}

func (g *snapshotGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.count
	ch <- g.age
}

func (g *snapshotGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for table, s := range g.tables {
		ch <- prometheus.MustNewConstMetric(g.count, prometheus.GaugeValue, float64(s.count), table)
		age := 0.0
		if !s.oldest.IsZero() {
			age = max(0, now.Sub(s.oldest).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(g.age, prometheus.GaugeValue, age, table)
	}
}

// SetSnapshots records a table's snapshot count and its oldest snapshot's
// commit time (zero when it has none).
func (m *Metrics) SetSnapshots(table string, count int, oldest time.Time) {
	m.snapshots.mu.Lock()
	defer m.snapshots.mu.Unlock()
	m.snapshots.tables[table] = snapshotStat{count: count, oldest: oldest}
}
