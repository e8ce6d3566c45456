package status

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
)

// benchTables is the fleet the benchmarks render: 1,000 tables of 4
// partitions, each with a last job, 20 jobs running and 20 failures.
const benchTables = 1000

func benchSource() *fakeSource {
	f := &fakeSource{replica: "bench", owner: "bench", health: map[string]planner.Health{},
		parts: map[string][]planner.PartitionCounters{}, jobs: Jobs{Last: map[string]Job{}}, plans: map[string]planner.Plan{}}
	now := time.Now()
	for i := range benchTables {
		name := fmt.Sprintf("lake%02d.events_%04d", i%10, i)
		f.health[name] = planner.Health{Table: name, SnapshotID: int64(i), DataFiles: 40 + i%7, DataBytes: 900 << 20,
			TargetFileSize: 512 << 20, SmallFiles: i % 9, TinyFiles: i % 3, Snapshots: 30 + i%40, DataManifests: 12,
			DeleteFiles: i % 5, OldestSnapshotAge: time.Hour, Healthy: i%17 != 0,
			Problems: []string{"61 snapshots (limit 50): expiry is not running or retain_last is too large"}[:min(1, i%17/16)]}
		plan := planner.Plan{Table: name}
		for p := range 4 {
			key := fmt.Sprintf("day=2026-12-0%d", p+1)
			f.parts[name] = append(f.parts[name], planner.PartitionCounters{Key: key,
				Counters: planner.Counters{DataFiles: 10, Bytes: 225 << 20, SmallFiles: i % 3}})
			plan.Partitions = append(plan.Partitions, planner.PartitionPlan{Key: key, Checks: []planner.Check{
				{Threshold: "small_file_count", Measured: int64(i % 3), Limit: 8, Unit: "files"},
				{Threshold: "delete_file_count", Measured: 0, Limit: 20, Unit: "files"},
				{Threshold: "compact_when_quiet_after", Measured: 3600, Limit: 60, Unit: "seconds"}}})
		}
		f.plans[name] = plan
		f.jobs.Last[name] = Job{JobEvent: events.JobEvent{Phase: events.JobSucceeded, JobID: fmt.Sprintf("job-%d", i),
			Kind: "compact", Table: name, Outcome: "succeeded", Time: now.Add(-time.Minute), DurationSeconds: 2.5,
			Partitions: []string{"day=2026-12-01"}, Counts: map[string]int64{"rewritten_data_files_count": 8, "added_data_files_count": 1}}}
		if i%50 == 0 {
			j := f.jobs.Last[name]
			j.Phase, j.Outcome, j.Error = events.JobFailed, "failed", "commit: conflict after 10 attempts"
			f.jobs.Failures = append(f.jobs.Failures, j)
		}
		if i%50 == 1 {
			f.jobs.Active = append(f.jobs.Active, Job{JobEvent: events.JobEvent{Phase: events.JobStarted, JobID: fmt.Sprintf("run-%d", i),
				Kind: "compact", Table: name, Partitions: []string{"day=2026-12-04"}, ScheduledAt: now.Add(-time.Second),
				Reasons: []events.JobReason{{Partition: "day=2026-12-04", Threshold: "small_file_count", Measured: 9, Limit: 8}}},
				StartedAt: now})
		}
	}
	return f
}

// BenchmarkStatusPage1000Tables renders / for 1,000 tables from a source
// holding them in memory (as the worker's state does), each table without
// a job with the planner's outlook to explain (the planner's own cost of
// those outlooks is planner.BenchmarkOutlook1000Tables).
func BenchmarkStatusPage1000Tables(b *testing.B) {
	h := Handler(benchSource(), Options{})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "page_bytes")
}

// BenchmarkMetricsScrape1000Tables is the peer: one /metrics scrape of the
// same 1,000 tables' per-table series (data files, small files, delete
// files of three kinds, delete-file ratio, snapshots).
func BenchmarkMetricsScrape1000Tables(b *testing.B) {
	m := metrics.New()
	now := time.Now()
	for name, h := range benchSource().health {
		m.DataFiles.WithLabelValues(name).Set(float64(h.DataFiles))
		m.SmallFiles.WithLabelValues(name).Set(float64(h.SmallFiles))
		for _, kind := range []string{"position", "equality", "deletion_vector"} {
			m.DeleteFiles.WithLabelValues(name, kind).Set(float64(h.DeleteFiles))
		}
		m.DeleteFileRatio.WithLabelValues(name).Set(0.1)
		m.SetSnapshots(name, h.Snapshots, now.Add(-h.OldestSnapshotAge))
	}
	h := m.Handler(func(context.Context) error { return nil })
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "lake00.events_0000") {
			b.Fatalf("status %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "page_bytes")
}
