package main

import (
	"context"
	"io"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
)

const convertDeletesDescription = `Converts equality deletes into position deletes now, rewriting no data file
(what a Flink upsert sink or a Kafka Connect CDC writer leaves with nearly
every commit; each one makes every later scan of its partition match rows
against it). In each partition with equality deletes (or only those given
with --partition), every equality delete file is replaced by position
deletes naming the rows it deletes: the data files it applies to (those of
its partition with a lower data sequence number) are read, only their
equality columns, and the matching rows become (file_path, pos) rows. One
commit, validated against every writer that committed meanwhile; a
concurrent rewrite of a scanned file makes it plan again on the new files (at
most twice, then it fails and leaves the table as it was).

An equality delete on a field the data files lack, or of another type, is
refused and the table left untouched.

Prints removed_equality_delete_files_count, added_position_delete_files_count,
matched_rows_count, scanned_data_files_count and read_bytes_count (the
column chunks read). With --dry-run, the same counts from reading alone,
and nothing is written.`

// convertDeletesCmd is `reactor convert-equality-deletes TABLE`.
func convertDeletesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("convert-equality-deletes", convertDeletesDescription)
	var partitions stringList
	c.fs.Var(&partitions, "partition", "convert only in this partition `key` (category=books, as reactor plan shows it), repeatable")
	dryRun := c.fs.Bool("dry-run", false, "report what would be converted; write nothing")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	return runOneShot(ctx, c, jobkind.ConvertEqualityDeletes,
		planner.ManualOptions{Partitions: partitions, DryRun: *dryRun}, stdout, stderr)
}
