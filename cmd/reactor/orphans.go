package main

import (
	"context"
	"io"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
)

const orphansDescription = `Finds orphan files now, like Spark's remove_orphan_files: it lists the
table's location and reports the files no snapshot, metadata file or
statistics file references and that are older than --older-than (default:
the thresholds' orphan_margin, 72h). It deletes them only with --dry-run=false
and orphan_delete: true for the table in the thresholds file; otherwise it is
a dry run that prints each orphan_file_location.

Prints orphan_files_count, orphan_bytes_count and deleted_files_count, then
one orphan_file_location line per file, then the unreferenced files younger
than the margin (not orphans yet: a commit in progress may still add them),
each with its age and when it becomes eligible for deletion.`

// orphansCmd is `reactor orphans TABLE`.
func orphansCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("orphans", orphansDescription)
	olderThan := c.fs.Duration("older-than", 0, "only files older than this `duration` (0: the configured orphan_margin; at least 24h)")
	dryRun := c.fs.Bool("dry-run", true, "report the orphans without deleting them (--dry-run=false deletes, if orphan_delete allows)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if *olderThan < 0 {
		return usageErrorf("--older-than must not be negative")
	}
	cfg, err := c.thresholds()
	if err != nil {
		return err
	}
	deleteAllowed := cfg.For(c.table, nil).OrphanDelete
	if !*dryRun && !deleteAllowed {
		return usageErrorf("--dry-run=false needs orphan_delete: true for %s in the thresholds file (deletion is opt-in per table)", c.table)
	}
	return runOneShot(ctx, c, jobkind.RemoveOrphans,
		planner.ManualOptions{OlderThan: *olderThan, DryRun: *dryRun, OrphanDelete: deleteAllowed}, stdout, stderr)
}
