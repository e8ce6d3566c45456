package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/icereactor/reactor/planner"
)

const compactDescription = `Compacts a table now, like Spark's rewrite_data_files with the binpack
strategy: in each partition (or only those given with --partition), files
below the small-file size are rewritten into files of the target size, in
groups of at least min_input_files, deletes applied. Thresholds such as
small_file_count and the quiet period do not apply; the thresholds file's
sizes, min_input_files and commit settings do. A commit that conflicts with a
writer is retried and re-validated as in reactor run.

Prints Spark's result columns: rewritten_data_files_count,
added_data_files_count, rewritten_bytes_count, failed_data_files_count,
removed_delete_files_count. With --dry-run, the files and bytes that would be
rewritten, and nothing is written.`

// compactCmd is `reactor compact TABLE`.
func compactCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("compact", compactDescription)
	var partitions stringList
	c.fs.Var(&partitions, "partition", "compact only this partition `key` (category=books, as reactor plan shows it), repeatable")
	dryRun := c.fs.Bool("dry-run", false, "plan the rewrite groups and print what would be rewritten; write nothing")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	return runOneShot(ctx, c, planner.KindCompact, planner.ManualOptions{Partitions: partitions, DryRun: *dryRun}, stdout, stderr)
}

// stringList is a repeatable string flag; its environment variable holds
// a comma-separated list.
type stringList []string

func (l *stringList) isList() {}

func (l *stringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *stringList) Set(s string) error {
	if s = strings.TrimSpace(s); s == "" {
		return errors.New("empty value")
	}
	if !slices.Contains(*l, s) {
		*l = append(*l, s)
	}
	return nil
}
