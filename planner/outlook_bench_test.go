package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// BenchmarkOutlook1000Tables is what the status page's / asks of the
// planner when none of 1,000 tables has a job queued or running: one
// Outlook per table, each with 4 partitions below their thresholds (the
// page's other cost is status.BenchmarkStatusPage1000Tables).
func BenchmarkOutlook1000Tables(b *testing.B) {
	cfg, err := thresholds.Parse(nil)
	if err != nil {
		b.Fatal(err)
	}
	p := New(Options{Config: cfg})
	defer p.Close()
	now := time.Now()
	for i := range 1000 {
		name := fmt.Sprintf("lake%02d.events_%04d", i%10, i)
		st := &tableState{table: tablename.MustParseName(name),
			settings: cfg.For(name, nil)}
		st.counters.partitions = map[string]*partitionState{}
		for k := range 4 {
			key := fmt.Sprintf("day=2026-12-%02d", k+1)
			st.counters.partitions[key] = &partitionState{Key: key, Counters: Counters{DataFiles: 6, SmallFiles: 3, Bytes: 40 << 20,
				SmallBytes: 3 << 20, Rows: 60_000, LastWrite: now.Add(-time.Duration(k) * time.Hour)}}
		}
		p.tables[name] = st
	}
	names := p.Tables()
	for b.Loop() {
		for _, name := range names {
			if _, ok := p.Outlook(name, now); !ok {
				b.Fatal(name)
			}
		}
	}
}
