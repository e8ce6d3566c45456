package worker

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/streamwriter"
)

// BenchmarkPollIdleTables: what the polling safety net costs a fleet of
// idle tables at the default refresh_interval (5m), against the same
// process with polling off, in the same run: 1,000 tables in the embedded
// SQLite catalog, reactor run's worker with every table discovered, then
// a window of 60 s measured with polling on and one with
// it off. CPU is the whole process's (the embedded NATS server and the
// benchmark's catalog included), so the difference is polling's.
//
//	go test -run '^$' -bench PollIdleTables -benchtime 1x ./worker/
func BenchmarkPollIdleTables(b *testing.B) {
	const tables, window = 1000, time.Minute
	h := newHarness(b, testThresholds+"  refresh_interval: 5m\n", nil)
	for i := range tables - 1 { // the harness made db.events
		if _, err := streamwriter.CreateTable(h.ctx, h.cat, table.Identifier{"db", fmt.Sprintf("idle%04d", i)}, nil); err != nil {
			b.Fatal(err)
		}
	}
	h.workerCfg = func(c *Config) { c.DisableNotifications = true }
	measure := func(w *Worker) (cpu time.Duration, checks float64, calls map[string]int64) {
		h.eventually("every table discovered", func() bool { return len(w.Planner.Tables()) == tables })
		time.Sleep(5 * time.Second) // discovery's tail
		polls := func() float64 {
			n := 0.0
			for _, o := range []string{PollUnchanged, PollChanged, PollLoaded, PollError} {
				n += testutil.ToFloat64(w.Metrics.Polls.WithLabelValues(o))
			}
			return n
		}
		before, checks0, calls0 := processCPU(b), polls(), w.catalog.CallCounts()
		time.Sleep(window)
		calls = w.catalog.CallCounts()
		for k := range calls {
			calls[k] -= calls0[k]
		}
		return processCPU(b) - before, polls() - checks0, calls
	}
	for b.Loop() {
		w := h.start()
		onCPU, checks, onCalls := measure(w)
		w.Close()
		h.cfgYAML = testThresholds + "  refresh_interval: 0s\n"
		w = h.start()
		offCPU, _, offCalls := measure(w)
		w.Close()
		h.cfgYAML = testThresholds + "  refresh_interval: 5m\n"

		perCheck := (onCPU - offCPU).Seconds() / max(checks, 1)
		interval := 5 * time.Minute
		b.ReportMetric(checks, "checks")
		b.ReportMetric(100*onCPU.Seconds()/window.Seconds(), "core-%-polling")
		b.ReportMetric(100*offCPU.Seconds()/window.Seconds(), "core-%-off")
		b.ReportMetric(100*perCheck*tables/interval.Seconds(), "core-%-polls-at-5m")
		calls := onCalls[catalogs.CallLoad] + onCalls[catalogs.CallLocate]
		b.ReportMetric(float64(calls)/(tables*window.Seconds()/interval.Seconds()), "calls/table/interval")
		b.ReportMetric(float64(calls)/max(checks, 1), "calls/check")
		b.ReportMetric(float64(onCalls[catalogs.CallLoad]), "loads-polling")
		b.ReportMetric(float64(offCalls[catalogs.CallLoad]+offCalls[catalogs.CallLocate]), "calls-off")
	}
}

// processCPU is the process's user and system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
