package executor_test

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// BenchmarkTieredCompactionRealRun is the real counterpart of the planning
// simulation (planner's BenchmarkTierWriteAmplification): a writer commits
// small batches into one partition, and after every commit reactor (planner
// and executor, no NATS) runs until quiet; it reports bytes rewritten /
// bytes written, and the live files at the end against the ideal
// ceil(bytes/target).
//
//	go test ./executor -run '^$' -bench TieredCompactionRealRun -benchtime 1x
func BenchmarkTieredCompactionRealRun(b *testing.B) {
	for _, tc := range []struct {
		name  string
		extra string
	}{
		{"defaults", ""},
		{"small_file_count=20/tier_fan_in=8", "  small_file_count: 20\n  tier_fan_in: 8\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				tieredRealRun(b, tc.extra)
			}
		})
	}
}

func tieredRealRun(b *testing.B, extra string) {
	const (
		commits = 600
		rows    = 300
		target  = 2 << 20
	)
	ctx := b.Context()
	cat, err := embedded.OpenCatalog(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ident := table.Identifier{"db", "amp"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		b.Fatal(err)
	}
	cfg, err := thresholds.Parse([]byte(fmt.Sprintf(`defaults:
  target_file_size: %d
  quiet_period: 0s
  cooldown: 0s
  manifest_count: 1000000
  orphan_listing_interval: 100000h
%s`, target, extra)))
	if err != nil {
		b.Fatal(err)
	}
	w := streamwriter.AppendOnly(cat, ident, nil)
	r := newConvergenceReactor(b, cat, cfg)
	defer r.close()
	var written, rewritten int64
	jobs := 0
	for range commits {
		if _, err := w.Commit(ctx, "a", rows); err != nil {
			b.Fatal(err)
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := addedBytes(tbl); err == nil {
			written += n
		}
		for _, j := range r.runUntilQuiet(ctx, ident) {
			rewritten += j.rep.RewrittenBytes
			jobs++
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var live int64
	for _, t := range tasks {
		live += t.File.FileSizeBytes()
	}
	ideal := (live + target - 1) / target
	c, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		b.Fatal(err)
	}
	if c.Total != w.Written() {
		b.Fatalf("table %v, writer %v", c.Total, w.Written())
	}
	b.ReportMetric(float64(rewritten)/float64(written), "rewritten/written")
	b.ReportMetric(float64(len(tasks)), "live_files")
	b.ReportMetric(float64(ideal), "ideal_files")
	b.ReportMetric(float64(jobs), "jobs")
	b.Logf("%d commits, %s written, %s rewritten (%.2fx), %d jobs; %d live files, ideal %d", commits,
		thresholds.Size(written), thresholds.Size(rewritten), float64(rewritten)/float64(written), jobs, len(tasks), ideal)
}

// addedBytes is what the current snapshot added (the summary's
// added-files-size).
func addedBytes(tbl *table.Table) (int64, error) {
	var n int64
	_, err := fmt.Sscan(tbl.CurrentSnapshot().Summary.Properties["added-files-size"], &n)
	return n, err
}
