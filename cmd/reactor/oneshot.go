package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// oneShotResult is what a one-shot job prints with --json.
type oneShotResult struct {
	JobID   string           `json:"job_id"`
	Kind    jobkind.Kind     `json:"kind"`
	Table   string           `json:"table"`
	DryRun  bool             `json:"dry_run"`
	Outcome string           `json:"outcome"`
	Error   string           `json:"error,omitempty"`
	Counts  map[string]int64 `json:"counts"`
	// Orphans lists orphan files (remove_orphans only), as Spark's
	// orphan_file_location column does; Young the unreferenced files too
	// young to be orphans yet, with when they will be.
	Orphans []executor.OrphanFile `json:"orphans,omitempty"`
	Young   []executor.YoungFile  `json:"too_young,omitempty"`
	// NotKnownInDryRun names the counts a dry run cannot know (the files
	// a rewrite would write exist only once written): they are left out
	// of Counts rather than reported as 0.
	NotKnownInDryRun []string `json:"not_known_in_dry_run,omitempty"`
}

// notKnownInDryRun are the counts of each kind that only writing tells.
func notKnownInDryRun(kind jobkind.Kind) []string {
	switch kind {
	case jobkind.Compact, jobkind.Sort:
		return []string{"added_data_files_count"}
	case jobkind.RewriteManifests:
		return []string{"added_manifests_count"}
	}
	return nil
}

// runOneShot runs one job kind on the command's table through the same
// executor the worker uses, logging progress as text to stderr, and prints
// the result columns of the equivalent Spark procedure to stdout. A job that
// failed or gave up on conflicts is an error (exit 1).
func runOneShot(ctx context.Context, c *tableCommand, kind jobkind.Kind, opts planner.ManualOptions, stdout, stderr io.Writer) error {
	logTo, progress := stderr, (*terminalProgress)(nil)
	if showProgress(stdout, stderr, *c.json) {
		progress = newTerminalProgress(stderr, fmt.Sprintf("%s %s", kind, c.table), time.Now)
		logTo = progress.logWriter()
	}
	log := slog.New(redact.Handler(slog.NewTextHandler(logTo, nil)))
	// A dry run commits nothing: the catalog is opened refusing changes.
	c.readOnly = opts.DryRun
	cfg, cat, tbl, closeCatalog, err := c.load(ctx, log)
	if err != nil {
		return err
	}
	defer closeCatalog()
	job, err := planner.ManualJob(ctx, tbl, cfg, kind, opts, time.Now())
	switch {
	case errors.Is(err, planner.ErrUnsafeOption):
		return &usageError{err: err}
	case errors.Is(err, planner.ErrUnknownPartition):
		return &inputError{err: err}
	case err != nil:
		return err
	}
	if (kind == jobkind.Compact || kind == jobkind.RewritePositionDeletes || kind == jobkind.ConvertEqualityDeletes) && len(job.Partitions) == 0 {
		fmt.Fprintf(stderr, "%s has no partition to work on\n", c.table)
	}
	concurrency := thresholds.DefaultConcurrency
	if cfg.Concurrency != nil {
		concurrency = *cfg.Concurrency
	}
	// An expiry's pending deletions are read by a later pass (reactor run,
	// or this command run again): they need a key that outlives this
	// process. Other one-shot jobs write no record another process acts on.
	keys, _, err := c.records.keys(*c.catalog.dataDir, kind == jobkind.ExpireSnapshots && !job.DryRun, os.Getenv)
	if err != nil {
		return err
	}
	scope, err := c.records.deletionScope()
	if err != nil {
		return err
	}
	execOpts := executor.Options{Catalog: cat, Logger: log, Metrics: metrics.New(), Concurrency: concurrency,
		SortMemory: int64(cfg.SortMemoryOrDefault()), SpillDir: cfg.SpillDirOrDefault(), Records: keys, DeletionScope: scope}
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
	// A dry run that found nothing to do reports no dry run of its own.
	out := oneShotResult{JobID: job.ID, Kind: kind, Table: job.Table.String(), DryRun: job.DryRun || rep.DryRun || rep.Orphans.DryRun,
		Outcome: res.Outcome.String(), Counts: rep.CountMap(kind), Orphans: rep.Orphans.Orphans, Young: rep.Orphans.Young}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	counts := rep.ProcedureCounts(kind)
	if kind == jobkind.ExpireSnapshots && !out.DryRun && res.Outcome != jobs.Failed {
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
	unknown := map[string]string{}
	if out.DryRun {
		for _, name := range notKnownInDryRun(kind) {
			if text := dryRunEstimate(ctx, tbl, cfg, kind, rep); text != "" {
				out.NotKnownInDryRun = append(out.NotKnownInDryRun, name)
				delete(out.Counts, name)
				unknown[name] = text
			}
		}
	}
	if *c.json {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printCounts(stdout, counts, unknown)
		for _, o := range out.Orphans {
			fmt.Fprintf(stdout, "orphan_file_location\t%s\n", o.Location)
		}
		printYoung(stdout, out.Young, rep.Orphans.TooYoung, time.Now())
		if out.DryRun {
			fmt.Fprintln(stdout, dryRunLine)
		}
	}
	switch res.Outcome {
	case jobs.Failed:
		return fmt.Errorf("%s: failed: %w", job.Table.String(), res.Err)
	case jobs.GaveUp:
		return fmt.Errorf("%s: gave up: %w", job.Table.String(), res.Err)
	}
	return nil
}

// dryRunEstimate says what a dry run can tell of a count it cannot know;
// "" when it does know it (nothing would be rewritten, so nothing added).
func dryRunEstimate(ctx context.Context, tbl *table.Table, cfg *thresholds.Config, kind jobkind.Kind, rep executor.Report) string {
	switch kind {
	case jobkind.Compact, jobkind.Sort:
		target := cfg.For(tablename.Format(tbl.Identifier()), tbl.Properties()).TargetFileSize
		if rep.RewrittenDataFiles == 0 || target <= 0 {
			return ""
		}
		return fmt.Sprintf("not known until written: about %d (%s rewritten at a target of %s; compression decides)",
			(rep.RewrittenBytes+target-1)/target, thresholds.Size(rep.RewrittenBytes), thresholds.Size(target))
	case jobkind.RewriteManifests:
		if rep.ManifestsRewritten == 0 {
			return ""
		}
		if fs, err := tbl.FS(ctx); err == nil && executor.FitsInOneManifest(tbl, fs) {
			return "not known until written: 1 (together they fit in one manifest of the target size)"
		}
		plan, err := planner.Explain(ctx, tbl, cfg, time.Now())
		if err != nil || len(plan.Partitions) == 0 {
			return "not known until written"
		}
		return fmt.Sprintf("not known until written: at least %d (one per partition with data files)", len(plan.Partitions))
	}
	return "not known until written"
}

// shownYoung bounds the young files printed (--json lists up to 100).
const shownYoung = 10

// printYoung lists the unreferenced files too young to be orphans, oldest
// first: each one's age and when it becomes eligible for deletion.
func printYoung(w io.Writer, young []executor.YoungFile, total int, now time.Time) {
	if total == 0 {
		return
	}
	young = slices.Clone(young)
	slices.SortStableFunc(young, func(a, b executor.YoungFile) int { return a.Modified.Compare(b.Modified) })
	fmt.Fprintf(w, "%d unreferenced files are younger than the orphan margin: not orphans yet (a commit in progress may still add them)\n", total)
	for _, y := range young[:min(len(young), shownYoung)] {
		fmt.Fprintf(w, "too_young_file_location\t%s (%s old; eligible from %s, in %s)\n", y.Location,
			now.Sub(y.Modified).Round(time.Second), y.EligibleAt.UTC().Format(time.RFC3339), y.EligibleAt.Sub(now).Round(time.Second))
	}
	if n := total - min(len(young), shownYoung); n > 0 {
		fmt.Fprintf(w, "too_young_file_location\t... and %d more (--json lists %d)\n", n, len(young))
	}
}

// dryRunLine ends every dry run's output, whatever the command.
const dryRunLine = "dry run: nothing was written"

// printCounts prints counts as a two-column table, one per line; a count
// in unknown is printed as what is known of it instead of its value.
func printCounts(w io.Writer, counts []executor.Count, unknown map[string]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range counts {
		if text, ok := unknown[c.Name]; ok {
			fmt.Fprintf(tw, "%s\t%s\n", c.Name, text)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\n", c.Name, c.Value)
	}
	tw.Flush()
}

// deleteDueFiles runs the deletion pass for the table's pending batches
// that are due, and returns its deleted-file counts.
func deleteDueFiles(ctx context.Context, exec *executor.Executor, expiry jobs.Job) (map[string]int64, error) {
	pass := expiry
	pass.Kind = jobkind.DeleteExpiredFiles
	due, err := exec.DuePendingDeletes(ctx, expiry.Table.Ident(), time.Now())
	if err != nil || len(due) == 0 {
		return nil, err
	}
	pass.PendingDeletes = due
	res, rep := exec.Run(ctx, pass)
	if res.Outcome == jobs.Failed {
		return nil, fmt.Errorf("delete files earlier expiries unlinked: %w", res.Err)
	}
	return rep.CountMap(jobkind.DeleteExpiredFiles), nil
}
