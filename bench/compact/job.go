package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

func logLevel() slog.Level {
	if os.Getenv("REACTOR_BENCH_COMPACT_VERBOSE") != "" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// jobResult is what the reactor role reports.
type jobResult struct {
	Outcome  string `json:"outcome"`
	Error    string `json:"error,omitempty"`
	FilesIn  int    `json:"files_in"`
	Files    int    `json:"files"`
	BytesIn  int64  `json:"bytes_in"`
	BytesOut int64  `json:"bytes_out"`
	Groups   int    `json:"groups"`
}

// benchThresholds makes the whole partition one compaction: every file is
// small, in one tier, merged together, in one group, committed at once.
func benchThresholds(target int64, sortOrder string) (*thresholds.Config, error) {
	doc := fmt.Sprintf(`defaults:
  target_file_size: %d
  min_input_files: 2
  small_file_count: 2
  tier_fan_in: 2
  max_group_size: 1TiB
  partial_progress_max_commits: 1
  min_reader_margin: 0s
`, target)
	if sortOrder != "" {
		doc += fmt.Sprintf("  sort_order: %q\n", sortOrder)
	}
	return thresholds.Parse([]byte(doc))
}

// runJob compacts (or, with sortOrder, sorts) the bench table under dir
// through the executor, as reactor compact does.
func runJob(ctx context.Context, dir string, target int64, sortOrder string, opts executor.Options) (jobResult, error) {
	cat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		return jobResult{}, err
	}
	tbl, err := cat.LoadTable(ctx, benchTable)
	if err != nil {
		return jobResult{}, err
	}
	cfg, err := benchThresholds(target, sortOrder)
	if err != nil {
		return jobResult{}, err
	}
	kind, mo := jobkind.Compact, planner.ManualOptions{}
	if sortOrder != "" {
		kind, mo.Strategy = jobkind.Sort, thresholds.StrategySort
	}
	job, err := planner.ManualJob(ctx, tbl, cfg, kind, mo, time.Now())
	if err != nil {
		return jobResult{}, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	opts.Catalog, opts.Logger, opts.Metrics = cat, log, metrics.New()
	exec, err := executor.New(opts)
	if err != nil {
		return jobResult{}, err
	}
	res, rep := exec.Run(ctx, job)
	out := jobResult{Outcome: res.Outcome.String(), FilesIn: rep.RewrittenDataFiles, Files: rep.AddedDataFiles,
		BytesIn: rep.RewrittenBytes, BytesOut: rep.AddedBytes, Groups: rep.Groups}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	return out, nil
}
