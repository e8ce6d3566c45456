package main

import (
	"context"
	"io"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
)

const expireDescription = `Expires snapshots now, like Spark's expire_snapshots: snapshots older than
--older-than (default: the thresholds' snapshot_max_age, or the table's
history.expire.max-snapshot-age-ms) beyond the newest --retain-last are
removed, then the files no remaining snapshot references are deleted.
Branch and tag heads are never expired, and no snapshot younger than
min_reader_margin ever is, whatever the flags say.

Prints Spark's result columns: deleted_data_files_count,
deleted_position_delete_files_count, deleted_equality_delete_files_count,
deleted_manifest_files_count, deleted_manifest_lists_count,
deleted_statistics_files_count (and expired_snapshots_count). With --dry-run,
what would be expired and deleted, and nothing is committed or deleted.`

// expireCmd is `reactor expire TABLE`.
func expireCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("expire", expireDescription)
	olderThan := c.fs.Duration("older-than", 0, "expire snapshots older than this `duration` (0: the configured snapshot_max_age)")
	retainLast := c.fs.Int("retain-last", 0, "keep at least this many `n` snapshots (0: the configured retain_last)")
	dryRun := c.fs.Bool("dry-run", false, "report what would be expired and deleted; change nothing")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if *olderThan < 0 || *retainLast < 0 {
		return usageErrorf("--older-than and --retain-last must not be negative")
	}
	return runOneShot(ctx, c, jobkind.ExpireSnapshots,
		planner.ManualOptions{OlderThan: *olderThan, RetainLast: *retainLast, DryRun: *dryRun}, stdout, stderr)
}
