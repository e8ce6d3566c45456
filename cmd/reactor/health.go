package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/worker"
)

const healthDescription = `Checks one table's health now, as the seeds' maintenance DAG does after each
run: data files, average file size against the target, tiny files, snapshot
count and oldest snapshot age, against the thresholds file's health_* limits.
It reads the catalog directly (no worker needed) and exits 1 when the table is
unhealthy, so it can gate a pipeline.

TABLE is namespace.table. The catalog flags are those of reactor run.`

// errUnhealthy makes `reactor health` exit 1 after printing the report.
var errUnhealthy = errors.New("table is unhealthy")

// healthCmd is `reactor health TABLE`.
func healthCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("health", "health [flags] TABLE", healthDescription)
	catFlags := addCatalogFlags(fs, "`directory` of the embedded catalog")
	thresholdsFile := fs.String("thresholds", "", "thresholds YAML `file`; empty uses the built-in defaults")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	annotateEnv(fs)
	if err := parseFlagsAndArgs(fs, args, stdout); err != nil {
		return err
	}
	if err := applyEnv(fs, os.Getenv); err != nil {
		return &usageError{err: err}
	}
	if fs.NArg() != 1 || !strings.Contains(fs.Arg(0), ".") {
		return usageErrorf("want exactly one TABLE as namespace.table, got %q", fs.Args())
	}
	cfg := thresholds.Default()
	if *thresholdsFile != "" {
		var err error
		if cfg, err = thresholds.Load(*thresholdsFile); err != nil {
			return &usageError{err: err}
		}
	}
	catProps, err := catFlags.properties()
	if err != nil {
		return err
	}
	cat, err := worker.OpenCatalog(ctx, worker.Config{DataDir: *catFlags.dataDir, CatalogName: *catFlags.name, CatalogProps: catProps,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("open catalog: %w", err)
	}
	if c, ok := cat.(interface{ Close() error }); ok {
		defer c.Close()
	}
	name := fs.Arg(0)
	i := strings.LastIndex(name, ".")
	ident := append(strings.Split(name[:i], "."), name[i+1:])
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			return usageErrorf("table %s not found: %w", name, err)
		}
		return fmt.Errorf("load %s: %w", name, err)
	}
	h, err := planner.CheckHealth(ctx, tbl, cfg, time.Now())
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(h); err != nil {
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

func printHealth(w io.Writer, h planner.Health) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "table\t%s (snapshot %d)\n", h.Table, h.SnapshotID)
	fmt.Fprintf(tw, "data files\t%d (%s)\n", h.DataFiles, thresholds.Size(h.DataBytes))
	fmt.Fprintf(tw, "average file size\t%s (target %s)\n", thresholds.Size(h.AvgFileSize), thresholds.Size(h.TargetFileSize))
	fmt.Fprintf(tw, "tiny files (< %s)\t%d\n", thresholds.Size(h.TinyFileSize), h.TinyFiles)
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
