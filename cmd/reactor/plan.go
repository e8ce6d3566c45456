package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/sparkrun"
	"github.com/icereactor/reactor/thresholds"
)

const planDescription = `Shows what reactor would schedule for a table now, and why: for every
partition its counters and each threshold's measured value and limit, then
the table-wide thresholds (snapshot age and count, manifest count), then the
jobs due, in the order reactor would run them, each with its input and the
backend it would run on (local, or spark when a rule of the thresholds
file's spark section selects it and sparkcall can express it), and why. It
reads the catalog directly and changes nothing. It runs as a one-off process, so
what a running reactor learned from its own jobs is not known here and the output
says so at its end (cool-downs unknown in plan, a running job, pending deletions);
orphan cleanup needs a listing (reactor orphans shows its candidates). The status
page's table view shows the same decision with the running reactor's state.`

// planCmd is `reactor plan TABLE`.
func planCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("plan", planDescription)
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	// It only reads: a Hadoop catalog on an object store opens too.
	c.readOnly = true
	cfg, _, tbl, closeCatalog, err := c.load(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer closeCatalog()
	plan, err := planner.Explain(ctx, tbl, cfg, time.Now())
	if err != nil {
		return err
	}
	catName := *c.catalog.name
	if props, _ := c.catalog.properties(); props == nil {
		catName = embedded.CatalogName
	}
	spark := cfg.SparkSettings()
	for i := range plan.Jobs {
		d := sparkrun.Explain(plan.Jobs[i].Job(), tbl.Metadata(), spark, catName)
		plan.Jobs[i].Backend, plan.Jobs[i].BackendWhy = d.Backend, d.Why
	}
	// Through package redact, as the logs are: a backend's explanation
	// may quote a Spark Connect endpoint, and partition values are
	// whatever writers wrote.
	if *c.json {
		return writeJSON(stdout, redact.Any(plan))
	}
	var out strings.Builder
	printPlan(&out, plan)
	_, err = io.WriteString(stdout, redact.String(out.String()))
	return err
}

func printPlan(w io.Writer, p planner.Plan) {
	fmt.Fprintf(w, "table %s at snapshot %d; target file size %s (%s), small below %s\n\n",
		p.Table, p.SnapshotID, thresholds.Size(p.Settings.TargetFileSize), p.Settings.TargetFileSizeSource,
		thresholds.Size(p.Settings.SmallFileSize))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tFILES\tBYTES\tROWS\tTHRESHOLD\tMEASURED\tLIMIT\tSTATUS")
	for _, pp := range p.Partitions {
		for i, c := range pp.Checks {
			key, files, bytes, rows := "", "", "", ""
			if i == 0 {
				key, files = pp.Key, fmt.Sprint(pp.Counters.DataFiles)
				bytes, rows = thresholds.Size(pp.Counters.Bytes).String(), fmt.Sprint(pp.Counters.Rows)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", key, files, bytes, rows, c.Threshold, c.Measured, c.Limit, status(c, pp))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE-WIDE\tMEASURED\tLIMIT\tUNIT\tSTATUS")
	for _, c := range p.TableWide {
		st := "ok"
		if c.Over {
			st = "DUE"
		}
		if c.Note != "" {
			st += ": " + c.Note
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", c.Threshold, c.Measured, c.Limit, c.Unit, st)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if len(p.Jobs) == 0 {
		fmt.Fprintln(w, "nothing due")
	}
	for i, j := range p.Jobs {
		fmt.Fprintf(w, "job %d: %s", i+1, j.Kind)
		if len(j.Partitions) > 0 {
			fmt.Fprintf(w, " %v", j.Partitions)
		}
		fmt.Fprintln(w)
		for _, r := range j.Reasons {
			fmt.Fprintf(w, "  because %s\n", r)
		}
		fmt.Fprintf(w, "  input %d files, %s; runs on %s: %s\n", j.InputFiles, thresholds.Size(j.InputBytes), j.Backend, j.BackendWhy)
	}
	for _, h := range p.Held {
		fmt.Fprintf(w, "held: %s\n", h)
	}
	if len(p.Jobs) == 0 && !p.Next.IsZero() {
		fmt.Fprintf(w, "next look at %s\n", p.Next.Format(time.RFC3339))
	}
	if len(p.Unknown) > 0 {
		fmt.Fprintln(w)
		for _, u := range p.Unknown {
			fmt.Fprintln(w, u)
		}
	}
}

func status(c planner.Check, pp planner.PartitionPlan) string {
	switch {
	case !c.Over:
		return "ok"
	case pp.Due:
		return "DUE"
	default:
		return "over, waiting: " + pp.Wait
	}
}
