package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

const healthDescription = `Checks one table's health now, as the seeds' maintenance DAG does after each
run: data files, average file size against the target, tiny files, snapshot
count and oldest snapshot age, against the thresholds file's health_* limits.
It reads the catalog directly (no worker needed) and exits 1 when the table is
unhealthy, so it can gate a pipeline.`

// errUnhealthy makes `reactor health` exit 1 after printing the report.
var errUnhealthy = errors.New("table is unhealthy")

// healthCmd is `reactor health TABLE`.
func healthCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("health", healthDescription)
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
	h, err := planner.CheckHealth(ctx, tbl, cfg, time.Now())
	if err != nil {
		return err
	}
	if *c.json {
		if err := writeJSON(stdout, h); err != nil {
			return err
		}
	} else {
		printHealth(stdout, h)
	}
	if !h.Healthy {
		return errUnhealthy
	}
	return nil
}

// tinySource says where the tiny-file size came from.
func tinySource(source string) string {
	if source == thresholds.SourceConfig {
		return "tiny_file_size"
	}
	return source
}

func printHealth(w io.Writer, h planner.Health) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "table\t%s (snapshot %d)\n", h.Table, h.SnapshotID)
	fmt.Fprintf(tw, "data files\t%d (%s)\n", h.DataFiles, thresholds.Size(h.DataBytes))
	fmt.Fprintf(tw, "average file size\t%s (target %s)\n", thresholds.Size(h.AvgFileSize), thresholds.Size(h.TargetFileSize))
	fmt.Fprintf(tw, "tiny files\t%d (below %s: %s)\n", h.TinyFiles, thresholds.Size(h.TinyFileSize), tinySource(h.TinyFileSizeSource))
	fmt.Fprintf(tw, "small files\t%d\n", h.SmallFiles)
	fmt.Fprintf(tw, "snapshots\t%d (oldest %s old)\n", h.Snapshots, h.OldestSnapshotAge.Round(time.Second))
	fmt.Fprintf(tw, "data manifests\t%d\n", h.DataManifests)
	tw.Flush()
	for _, n := range h.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if h.Healthy {
		fmt.Fprintln(w, "HEALTHY")
		return
	}
	for _, p := range h.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	fmt.Fprintln(w, "UNHEALTHY")
}
