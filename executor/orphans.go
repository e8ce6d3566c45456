package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/planner"
)

// OrphanFile is one orphan: its location and size.
type OrphanFile struct {
	Location string `json:"location"`
	Size     int64  `json:"size"`
}

// OrphanReport is what an orphan-cleanup job found and did.
type OrphanReport struct {
	Source string `json:"source"`
	DryRun bool   `json:"dry_run"`
	// Orphans are the files found orphaned (deleted unless DryRun).
	Orphans      []OrphanFile `json:"orphans"`
	OrphanBytes  int64        `json:"orphan_bytes"`
	DeletedFiles int          `json:"deleted_files"`
	// StillReferenced counts tracked candidates some snapshot turned out
	// to reference (no longer tracked, never deleted).
	StillReferenced int `json:"still_referenced"`
}

// schemeAliases lets s3:// references match s3a:// or s3n:// listings and
// tracked paths (Spark writes s3a, other engines s3).
var schemeAliases = map[string]string{"s3": "s3,s3a,s3n"}

// removeOrphans deletes — or in a dry run, reports — files under the table
// location that no snapshot, metadata file or statistics file references
// and that are older than the orphan margin. Tracked candidates (from
// bucket notifications) are checked against the whole history first;
// listing jobs use iceberg-go's orphan planning over a full listing.
func (e *Executor) removeOrphans(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	var rep Report
	tbl, err := e.cat.LoadTable(ctx, job.Table)
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: fmt.Errorf("load table: %w", err)}, rep
	}
	or := OrphanReport{Source: job.OrphanSource, DryRun: !job.Settings.OrphanDelete || job.DryRun}
	var settled []string
	switch job.OrphanSource {
	case planner.OrphansFromTracking:
		settled, err = e.removeTrackedOrphans(ctx, tbl, job, &or)
	case planner.OrphansFromListing:
		err = e.removeListedOrphans(ctx, tbl, job, &or)
	default:
		err = fmt.Errorf("unknown orphan source %q", job.OrphanSource)
	}
	rep.Orphans = or
	if err != nil {
		return planner.Result{Outcome: planner.Failed, Err: err, Settled: settled}, rep
	}
	const shown = 100 // the full list goes to the job report; logs stay readable
	paths := make([]string, 0, min(len(or.Orphans), shown))
	for _, o := range or.Orphans[:min(len(or.Orphans), shown)] {
		paths = append(paths, fmt.Sprintf("%s (%d B)", o.Location, o.Size))
	}
	msg := "orphan files deleted"
	if or.DryRun {
		msg = "orphan cleanup dry run: these files would be deleted (set orphan_delete: true for the table to delete them)"
	}
	log.Info(msg, "source", or.Source, "orphans", len(or.Orphans), "bytes", or.OrphanBytes, "deleted", or.DeletedFiles,
		"still_referenced", or.StillReferenced, "margin", job.Settings.OrphanMargin, "paths", paths)
	if len(or.Orphans) == 0 {
		return planner.Result{Outcome: planner.Noop, Settled: settled}, rep
	}
	return planner.Result{Outcome: planner.Succeeded, Settled: settled}, rep
}

func (e *Executor) removeTrackedOrphans(ctx context.Context, tbl *table.Table, job planner.Job, or *OrphanReport) ([]string, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open table io: %w", err)
	}
	refs, err := reachable(ctx, fs, tbl.Metadata())
	if err != nil {
		return nil, fmt.Errorf("read table history: %w", err)
	}
	referenced := refs.locations(tbl)
	if err := addPending(fs, tbl, referenced); err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-job.Settings.OrphanMargin)
	var settled []string
	for _, c := range job.OrphanCandidates {
		if referenced[canonicalLocation(c.Location)] {
			or.StillReferenced++
			settled = append(settled, c.Location)
			continue
		}
		if !c.Created.Before(cutoff) {
			continue // not old enough after all; a later job will see it
		}
		or.Orphans = append(or.Orphans, OrphanFile{Location: c.Location, Size: c.Size})
		or.OrphanBytes += c.Size
		if or.DryRun {
			continue
		}
		if err := fs.Remove(c.Location); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return settled, fmt.Errorf("delete orphan %s: %w", c.Location, err)
		}
		or.DeletedFiles++
		settled = append(settled, c.Location)
	}
	return settled, nil
}

func (e *Executor) removeListedOrphans(ctx context.Context, tbl *table.Table, job planner.Job, or *OrphanReport) error {
	opts := []table.OrphanCleanupOption{
		table.WithFilesOlderThan(job.Settings.OrphanMargin),
		table.WithEqualSchemes(schemeAliases),
	}
	plan, err := tbl.PlanOrphanFiles(ctx, opts...)
	if err != nil {
		return fmt.Errorf("plan orphan cleanup (full listing): %w", err)
	}
	// Second opinion from reactor's own walk of the history, comparing
	// paths the way they are spelled on either side: Iceberg Java writes
	// local paths as file:/ and keeps percent escapes of partition values
	// literally in file names, which iceberg-go's listing decodes, so its
	// plan can name live files (the Spark interop harness found it). A file
	// any spelling of a referenced path matches is never an orphan.
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("open table io: %w", err)
	}
	refs, err := reachable(ctx, fs, tbl.Metadata())
	if err != nil {
		return fmt.Errorf("read table history: %w", err)
	}
	owned := refs.locations(tbl)
	if err := addPending(fs, tbl, owned); err != nil {
		return err
	}
	referenced := map[string]bool{}
	for loc := range owned {
		for _, k := range spellings(loc) {
			referenced[k] = true
		}
	}
	// Hidden files (.crc sidecars, _temporary directories) are not
	// orphans either, as in Spark's remove_orphan_files: never reported,
	// never deleted.
	kept := func(path string) bool {
		return planner.HiddenPath(tbl.Location(), path) ||
			slices.ContainsFunc(spellings(path), func(k string) bool { return referenced[k] })
	}
	for _, f := range plan.OrphanFiles() {
		if kept(f.Path) {
			if !planner.HiddenPath(tbl.Location(), f.Path) {
				e.log.Warn("orphan listing named a file the table's history references; kept", "table", job.TableName, "path", f.Path)
			}
			continue
		}
		or.Orphans = append(or.Orphans, OrphanFile{Location: f.Path, Size: f.SizeBytes})
		or.OrphanBytes += f.SizeBytes
	}
	if or.DryRun || len(or.Orphans) == 0 {
		return nil
	}
	_, err = tbl.ExecuteOrphanCleanup(ctx, plan, table.WithDeleteFunc(func(path string) error {
		if kept(path) {
			return nil
		}
		if err := fs.Remove(path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return err
		}
		or.DeletedFiles++
		return nil
	}), table.WithCleanupMaxConcurrency(1))
	if err != nil {
		return fmt.Errorf("delete orphans: %w", err)
	}
	return nil
}

// locations is every referenced location, canonical, plus the table's
// metadata files (current and in the log).
func (r reachableFiles) locations(tbl *table.Table) map[string]bool {
	out := map[string]bool{}
	for _, set := range []map[string]bool{r.manifestLists, r.manifests, r.data, r.posDeletes, r.eqDeletes, r.stats} {
		for loc := range set {
			out[canonicalLocation(loc)] = true
		}
	}
	out[canonicalLocation(tbl.MetadataLocation())] = true
	for entry := range tbl.Metadata().PreviousFiles() {
		out[canonicalLocation(entry.MetadataFile)] = true
	}
	return out
}

// spellings are the forms a location may take on the two sides of an
// orphan comparison: as written, canonical (s3a/s3n as s3), a local path
// with file:, file:/ or file:/// stripped, and each of those with percent
// escapes decoded.
func spellings(loc string) []string {
	forms := []string{loc, canonicalLocation(loc)}
	if rest, ok := strings.CutPrefix(loc, "file:"); ok {
		forms = append(forms, "/"+strings.TrimLeft(rest, "/"))
	}
	for _, f := range forms[:len(forms):len(forms)] {
		if d, err := url.PathUnescape(f); err == nil && d != f {
			forms = append(forms, d)
		}
	}
	return forms
}

// canonicalLocation folds the S3 scheme aliases together, so a file
// referenced as s3a://b/k matches one tracked as s3://b/k.
func canonicalLocation(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || u.Host == "" {
		return loc
	}
	switch strings.ToLower(u.Scheme) {
	case "s3", "s3a", "s3n":
		return "s3://" + u.Host + "/" + strings.TrimPrefix(u.Path, "/")
	}
	return loc
}

// addPending adds the files waiting in the table's pending-deletion list to
// set: the deletion pass owns them, orphan cleanup never deletes them.
func addPending(fs iceio.IO, tbl *table.Table, set map[string]bool) error {
	pending, err := pendingLocations(fs, tbl)
	if err != nil {
		return fmt.Errorf("read pending deletions: %w", err)
	}
	for loc := range pending {
		set[loc] = true
	}
	return nil
}
