package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

const compactDescription = `Compacts a table now, like Spark's rewrite_data_files. With the binpack
strategy (the default): in each partition (or only those given with
--partition), files below the small-file size are rewritten into files of the
target size, in groups of at least min_input_files, deletes applied. With
--strategy sort or zorder: every file of each partition is rewritten with its
rows in --sort-order (Spark's syntax: "c1 ASC NULLS LAST, c2 DESC" or
"zorder(c1, c2)"; default the thresholds' sort_order, else for sort the
table's default order), in groups of at most max_group_size bytes.
Thresholds such as small_file_count and the quiet periods do not apply; the
thresholds file's sizes, min_input_files and commit settings do. A commit that
conflicts with a writer is retried and re-validated as in reactor run.

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
	strategy := c.fs.String("strategy", "", "binpack (the default), sort or zorder")
	sortOrder := c.fs.String("sort-order", "", "the `order` of a sort or zorder rewrite, in Spark's syntax")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	opts := planner.ManualOptions{Partitions: partitions, DryRun: *dryRun, SortOrder: *sortOrder}
	kind := jobkind.Compact
	switch s := thresholds.Strategy(*strategy); {
	case s == "" && *sortOrder != "":
		return usageErrorf("--sort-order needs --strategy sort or zorder")
	case s == "" || s == thresholds.StrategyBinpack:
	case s.Sorts():
		kind, opts.Strategy = jobkind.Sort, s
	default:
		return usageErrorf("--strategy must be binpack, sort or zorder, got %q", *strategy)
	}
	return runOneShot(ctx, c, kind, opts, stdout, stderr)
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
