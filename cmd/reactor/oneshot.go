package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/thresholds"
)

// oneShotResult is what a one-shot job prints with --json.
type oneShotResult struct {
	JobID   string           `json:"job_id"`
	Kind    planner.JobKind  `json:"kind"`
	Table   string           `json:"table"`
	DryRun  bool             `json:"dry_run"`
	Outcome string           `json:"outcome"`
	Error   string           `json:"error,omitempty"`
	Counts  map[string]int64 `json:"counts"`
	// Orphans lists orphan files (remove_orphans only), as Spark's
	// orphan_file_location column does.
	Orphans []executor.OrphanFile `json:"orphans,omitempty"`
}

// runOneShot runs one job kind on the command's table through the same
// executor the worker uses, logging progress as text to stderr, and prints
// the result columns of the equivalent Spark procedure to stdout. A job that
// failed or gave up on conflicts is an error (exit 1).
func runOneShot(ctx context.Context, c *tableCommand, kind planner.JobKind, opts planner.ManualOptions, stdout, stderr io.Writer) error {
	logTo, progress := stderr, (*terminalProgress)(nil)
	if showProgress(stdout, stderr, *c.json) {
		progress = newTerminalProgress(stderr, fmt.Sprintf("%s %s", kind, c.table), time.Now)
		logTo = progress.logWriter()
	}
	log := slog.New(redact.Handler(slog.NewTextHandler(logTo, nil)))
	cfg, cat, tbl, closeCatalog, err := c.load(ctx, log)
	if err != nil {
		return err
	}
	defer closeCatalog()
	job, err := planner.ManualJob(ctx, tbl, cfg, kind, opts, time.Now())
	if err != nil {
		return &usageError{err: err}
	}
	if (kind == planner.KindCompact || kind == planner.KindRewritePositionDeletes || kind == planner.KindConvertEqualityDeletes) && len(job.Partitions) == 0 {
		fmt.Fprintf(stderr, "%s has no partition to work on\n", c.table)
	}
	concurrency := thresholds.DefaultConcurrency
	if cfg.Concurrency != nil {
		concurrency = *cfg.Concurrency
	}
	execOpts := executor.Options{Catalog: cat, Logger: log, Metrics: metrics.New(), Concurrency: concurrency,
		SortMemory: int64(cfg.SortMemoryOrDefault()), SpillDir: cfg.SpillDirOrDefault()}
	stopProgress := func() {}
	if progress != nil {
		execOpts.Progress = progress
		pctx, cancel := context.WithCancel(ctx)
		drawn := make(chan struct{})
		go func() { defer close(drawn); progress.run(pctx) }()
		stopProgress = sync.OnceFunc(func() { cancel(); <-drawn })
		defer stopProgress()
	}
	exec, err := executor.New(execOpts)
	if err != nil {
		return err
	}
	res, rep := exec.Run(ctx, job)
	out := oneShotResult{JobID: job.ID, Kind: kind, Table: job.TableName, DryRun: rep.DryRun || rep.Orphans.DryRun,
		Outcome: res.Outcome.String(), Counts: rep.CountMap(kind), Orphans: rep.Orphans.Orphans}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	counts := rep.ProcedureCounts(kind)
	if kind == planner.KindExpireSnapshots && !out.DryRun && res.Outcome != planner.Failed {
		// Files earlier expiries unlinked whose reader margin has passed
		// are deleted now, so repeated one-shot runs (cron) converge
		// without a running reactor.
		deleted, err := deleteDueFiles(ctx, exec, job)
		if err != nil {
			return err
		}
		for i, c := range counts {
			counts[i].Value += deleted[c.Name]
			out.Counts[c.Name] += deleted[c.Name]
		}
		if rep.Expiry.Deferred {
			fmt.Fprintf(stderr, "%d files the expiry unlinked are deleted after min_reader_margin, at %s: by reactor run, or by reactor expire run again then\n",
				rep.Expiry.Files(), rep.Expiry.DeletionDue.Format(time.RFC3339))
		}
	}
	stopProgress()
	if *c.json {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printCounts(stdout, counts)
		for _, o := range out.Orphans {
			fmt.Fprintf(stdout, "orphan_file_location\t%s\n", o.Location)
		}
		if out.DryRun {
			fmt.Fprintln(stdout, "dry run: nothing was written, deleted or committed")
		}
	}
	switch res.Outcome {
	case planner.Failed, planner.GaveUp:
		return fmt.Errorf("%s %s: %s: %w", kind, job.TableName, res.Outcome, res.Err)
	}
	return nil
}

// printCounts prints counts as a two-column table, one per line.
func printCounts(w io.Writer, counts []executor.Count) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\n", c.Name, c.Value)
	}
	tw.Flush()
}

// deleteDueFiles runs the deletion pass for the table's pending batches
// that are due, and returns its deleted-file counts.
func deleteDueFiles(ctx context.Context, exec *executor.Executor, expiry planner.Job) (map[string]int64, error) {
	pass := expiry
	pass.Kind = planner.KindDeleteExpiredFiles
	due, err := exec.DuePendingDeletes(ctx, expiry.Table, time.Now())
	if err != nil || len(due) == 0 {
		return nil, err
	}
	pass.PendingDeletes = due
	res, rep := exec.Run(ctx, pass)
	if res.Outcome == planner.Failed {
		return nil, fmt.Errorf("delete files earlier expiries unlinked: %w", res.Err)
	}
	return rep.CountMap(planner.KindDeleteExpiredFiles), nil
}
