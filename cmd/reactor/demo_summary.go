package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/probe"
	"github.com/icereactor/reactor/streamwriter"
)

// summary compares the table before reactor ran and after it settled (the
// manner of the seeds' worked example, docs/design.md#origins: files and a
// full scan's time, before and after), says what reactor did and what its log holds, and checks the
// rows. Every figure comes from the catalog, the files and the job events,
// not from reactor's bookkeeping.
func (d *demo) summary(ctx context.Context, before, after observation, writeTime, settleTime time.Duration, settled string) error {
	out := d.out
	commits, writerConflicts := d.writer.Stats()
	live := commits - demoBacklog
	fmt.Fprintf(out, "\nwriter: %d commits of %d rows (%d before reactor, %d beside it in %.1fs, %.1f/s); reactor settled %.1fs later (%s)\n",
		commits, d.cfg.rows, demoBacklog, live, writeTime.Seconds(), float64(live)/writeTime.Seconds(), settleTime.Seconds(), settled)

	fmt.Fprintf(out, "\n%-16s %15s %15s %15s\n", "", "before reactor", "after", "compacted copy")
	row := func(name string, b, a, c string) { fmt.Fprintf(out, "%-16s %15s %15s %15s\n", name, b, a, c) }
	row("data files", fmt.Sprint(before.table.DataFiles), fmt.Sprint(after.table.DataFiles), fmt.Sprint(after.scan.CompactedFiles))
	row("files on disk", fmt.Sprint(before.table.DiskDataFiles), fmt.Sprint(after.table.DiskDataFiles), "")
	row("snapshots", fmt.Sprint(before.table.Snapshots), fmt.Sprint(after.table.Snapshots), "1")
	row("data manifests", fmt.Sprint(before.table.DataManifests), fmt.Sprint(after.table.DataManifests), "1")
	row("rows", fmt.Sprint(before.scan.Rows), fmt.Sprint(after.scan.Rows), fmt.Sprint(after.scan.Rows))
	row("full scan", roundMs(before.scan.Live).String(), roundMs(after.scan.Live).String(), roundMs(after.scan.Compacted).String())
	row("  vs compacted", fmt.Sprintf("%.1fx", before.scan.Ratio()), fmt.Sprintf("%.1fx", after.scan.Ratio()), "1.0x")
	quietSummary(out, d.atStop, after)

	tally := d.jobs.Tally()
	st := d.w.Pool.Stats()
	fmt.Fprintf(out, "\njobs: %s\n", jobsByKind(tally))
	written := d.writer.WrittenBytes()
	wa := 0.0
	if written > 0 {
		wa = float64(tally.RewrittenBytes) / float64(written)
	}
	fmt.Fprintf(out, "compaction: %d files rewritten into %d; it rewrote %s while the writer wrote %s (write amplification %.2fx)\n",
		tally.RewrittenFiles, tally.AddedFiles, byteSize(tally.RewrittenBytes), byteSize(written), wa)
	fmt.Fprintf(out, "expiry: %d snapshots expired; %d files (data, manifests, manifest lists) unlinked, %d deleted once min_reader_margin (%s) had passed, %d still waiting\n",
		tally.ExpiredSnapshots, tally.ExpiryDeletedFiles+tally.ExpiryDeferredFiles,
		tally.ExpiryDeletedFiles+tally.DeferredDeletedFiles, demoMinReaderMargin, tally.PendingDeletion())
	if n := after.table.DiskDataFiles - after.table.DataFiles; n > 0 && after.table.Snapshots == 1 {
		fmt.Fprintf(out, "        %d data files on disk belong to no snapshot: the writer's failed commit attempts leave theirs, for orphan cleanup (orphan_margin, 3 days by default)\n", n)
	}
	fmt.Fprintf(out, "conflicts retried: %d by reactor, %d by the writer\n", st.Conflicts, writerConflicts)
	fmt.Fprintf(out, "health: %s\n", d.health())
	lines, warnings := d.logCount.summary()
	if warnings == "" {
		warnings = "no warnings or errors"
	}
	fmt.Fprintf(out, "reactor's log: %d lines, %s\n", lines, warnings)
	fmt.Fprintf(out, "data files: %d written by the writer, %d live after compaction\n", d.writer.WrittenFiles(), after.table.DataFiles)

	contents, err := d.readBack(ctx)
	if err != nil {
		return err
	}
	want := d.writer.Written()
	fmt.Fprintf(out, "written: %s\n", want)
	fmt.Fprintf(out, "read:    %s\n", contents.Total)
	var problems []string
	if contents.Total != want {
		problems = append(problems, fmt.Sprintf("read %s, wrote %s", contents.Total, want))
	}
	dup := 0
	for _, c := range contents.IDs {
		if c != 1 {
			dup++
		}
	}
	if dup > 0 {
		problems = append(problems, fmt.Sprintf("%d ids present more than once", dup))
	}
	if int64(len(contents.IDs)) != want.Rows {
		problems = append(problems, fmt.Sprintf("%d distinct ids, %d rows written", len(contents.IDs), want.Rows))
	}
	if len(problems) > 0 {
		fmt.Fprintf(out, "MISMATCH: %s\n", strings.Join(problems, "; "))
		return errMismatch
	}
	fmt.Fprintln(out, "OK: table holds exactly the rows written")
	return nil
}

func (d *demo) readBack(ctx context.Context) (streamwriter.Contents, error) {
	tbl, err := d.cat.LoadTable(ctx, d.ident)
	if err != nil {
		return streamwriter.Contents{}, fmt.Errorf("load %v: %w", d.ident, err)
	}
	contents, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		return contents, fmt.Errorf("read back: %w", err)
	}
	return contents, nil
}

// jobsByKind lists finished jobs by kind in the order reactor runs them,
// with the ones that did not succeed called out.
func jobsByKind(t probe.JobTally) string {
	var parts []string
	for _, k := range jobkind.All() {
		kind := k.String()
		ok, noop, gaveUp, failed := t.Count(kind, "succeeded"), t.Count(kind, "noop"), t.Count(kind, "gave_up"), t.Count(kind, "failed")
		if ok+noop+gaveUp+failed == 0 {
			continue
		}
		s := fmt.Sprintf("%s %d", kind, ok)
		var extra []string
		for _, x := range []struct {
			n    int
			what string
		}{{noop, "no-op"}, {gaveUp, "gave up"}, {failed, "failed"}} {
			if x.n > 0 {
				extra = append(extra, fmt.Sprintf("%d %s", x.n, x.what))
			}
		}
		if len(extra) > 0 {
			s += " (+" + strings.Join(extra, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
