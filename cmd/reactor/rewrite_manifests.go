package main

import (
	"context"
	"io"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
)

const rewriteManifestsDescription = `Rewrites a table's data manifests now, like Spark's rewrite_manifests: the
current snapshot's data manifests are merged into target-sized manifests
clustered by partition, so scan planning and later commits read a few
manifests instead of one per streaming append. No data file is touched.

Prints rewritten_manifests_count and added_manifests_count. With --dry-run,
the number of data manifests a rewrite would read, and nothing is written.`

// rewriteManifestsCmd is `reactor rewrite-manifests TABLE`.
func rewriteManifestsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newTableCommand("rewrite-manifests", rewriteManifestsDescription)
	dryRun := c.fs.Bool("dry-run", false, "count the data manifests a rewrite would read; write nothing")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	return runOneShot(ctx, c, jobkind.RewriteManifests, planner.ManualOptions{DryRun: *dryRun}, stdout, stderr)
}
