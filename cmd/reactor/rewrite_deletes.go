package main

import (
	"context"
	"io"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
)

const rewriteDeletesDescription = `Merges position-delete files now, like Spark's rewrite_position_delete_files:
in each partition with position deletes (or only those given with
--partition), at least delete_min_input_files delete files are merged into
files near delete_target_file_size (else the table property
write.delete.target-file-size-bytes, else 64MiB). Entries whose data file is
gone are dropped; data files are not touched. The merged files take the
highest data sequence number of the files they replace, so every remaining
delete applies to exactly the rows it applied to before. A delete file that
names live data files of another partition is left as it is.

Prints Spark's result columns: rewritten_delete_files_count,
added_delete_files_count, rewritten_bytes_count, added_bytes_count (and
dangling_deletes_removed_count). With --dry-run, what would be merged, and
nothing is written.`

// rewriteDeletesCmd is `reactor rewrite-deletes TABLE`.
func rewriteDeletesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("rewrite-deletes", rewriteDeletesDescription)
	var partitions stringList
	c.fs.Var(&partitions, "partition", "merge only in this partition `key` (category=books, as reactor plan shows it), repeatable")
	dryRun := c.fs.Bool("dry-run", false, "report what would be merged; write nothing")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	return runOneShot(ctx, c, jobkind.RewritePositionDeletes,
		planner.ManualOptions{Partitions: partitions, DryRun: *dryRun}, stdout, stderr)
}
