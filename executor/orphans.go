package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/scope"
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
	// TooYoung counts candidates the object store reports as younger
	// than the orphan margin (whatever a notification claimed): kept,
	// and tracked from the store's LastModified.
	TooYoung int `json:"too_young,omitempty"`
	// Young names the first maxReportedYoung of them: each unreferenced,
	// with its age and when it becomes eligible for deletion.
	Young []YoungFile `json:"young,omitempty"`
	// RefusedFiles counts candidates refused (never deleted); Refused
	// names the first maxReportedRefusals of them with the reason.
	RefusedFiles int           `json:"refused_files,omitempty"`
	Refused      []RefusedFile `json:"refused,omitempty"`
	// OtherTables counts listed files that lie in a table nested in this
	// one's location: that table's, never considered.
	OtherTables int `json:"other_table_files,omitempty"`
}

// YoungFile is an unreferenced file younger than the orphan margin: not
// an orphan yet (a commit in progress may still add it), one from
// EligibleAt on if nothing references it by then.
type YoungFile struct {
	Location   string    `json:"location"`
	Size       int64     `json:"size"`
	Modified   time.Time `json:"modified"`
	EligibleAt time.Time `json:"eligible_at"`
}

// maxReportedYoung bounds the young files a report lists.
const maxReportedYoung = 100

// young counts and records a candidate the guard found too young.
func (or *OrphanReport) young(loc string, j judgement, margin time.Duration) {
	or.TooYoung++
	if len(or.Young) < maxReportedYoung {
		or.Young = append(or.Young, YoungFile{Location: bounded(loc), Size: j.size, Modified: j.modified,
			EligibleAt: j.modified.Add(margin)})
	}
}

// RefusedFile is one refused orphan candidate and why.
type RefusedFile struct {
	Location string `json:"location"`
	Reason   string `json:"reason"`
}

// maxReportedRefusals bounds the refusals a report lists.
const maxReportedRefusals = 100

// removeOrphans deletes — or in a dry run, reports — files under the table
// location that no snapshot, metadata file or statistics file references
// and that the object store says are older than the orphan margin. Tracked
// candidates come from bucket notifications, listing jobs from a full
// listing of the table location; either way every file
// passes the deletion guard (canonical location under the table, a stat of
// the exact key, the reference check re-read from the catalog) right
// before it is deleted.
func (e *Executor) removeOrphans(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	var rep Report
	loadedAt := time.Now()
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("load table: %w", err)}, rep
	}
	loadCost := time.Since(loadedAt)
	loadedAt = loadedAt.Add(loadCost) // when the load returned
	or := OrphanReport{Source: job.OrphanSource, DryRun: !job.Settings.OrphanDelete || job.DryRun}
	rc, err := e.newReclaim(ctx, log, tbl, &rep.Refusals)
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: err}, rep
	}
	if r := rc.refusedWhole(); r != nil {
		// Iceberg's remove_orphan_files refuses a table whose gc.enabled
		// is false; a history with snapshots left out makes their files
		// look orphaned. Either way nothing is listed or deleted.
		e.met.DeletionsRefused.WithLabelValues(job.Table.String(), string(r.Rule)).Inc()
		rep.Refusals.ByRule = map[scope.Rule]int{r.Rule: 1}
		rep.Orphans = or
		if r.Rule == scope.GCDisabled {
			log.Warn("orphan cleanup refused: nothing listed or deleted", "rule", r.Rule, "detail", r.Detail)
			return jobs.Result{Outcome: jobs.Noop}, rep
		}
		if r.Rule == scope.S3TablesRule {
			// The planner never schedules it there; asked for by hand
			// (reactor orphans, a manual job), it is an error that says why.
			log.Warn("orphan cleanup refused: an S3 Tables table, nothing listed or deleted", "rule", r.Rule, "detail", r.Detail)
			return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("orphan cleanup refused: S3 Tables removes unreferenced files itself (configure it with put-table-bucket-maintenance-configuration): %w", r)}, rep
		}
		return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("orphan cleanup refused: %w", r)}, rep
	}
	var settled []string
	var deferred map[string]time.Time
	switch job.OrphanSource {
	case jobs.OrphansFromTracking:
		settled, deferred, err = e.removeTrackedOrphans(ctx, log, tbl, rc, loadedAt, loadCost, job, &or)
	case jobs.OrphansFromListing:
		err = e.removeListedOrphans(ctx, log, tbl, rc, loadedAt, loadCost, job, &or)
	default:
		err = fmt.Errorf("unknown orphan source %q", job.OrphanSource)
	}
	rep.Orphans = or
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: err, Settled: settled, Deferred: deferred}, rep
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
		"still_referenced", or.StillReferenced, "too_young", or.TooYoung, "refused", or.RefusedFiles,
		"margin", max(job.Settings.OrphanMargin, job.Settings.OrphanMarginFloor), "paths", paths)
	if len(or.Orphans) == 0 {
		return jobs.Result{Outcome: jobs.Noop, Settled: settled, Deferred: deferred}, rep
	}
	return jobs.Result{Outcome: jobs.Succeeded, Settled: settled, Deferred: deferred}, rep
}

// removeTrackedOrphans deletes tracked candidates (nominated by bucket
// notifications) the deletion guard clears, one at a time, each right
// after its stat and reference check.
func (e *Executor) removeTrackedOrphans(ctx context.Context, log *slog.Logger, tbl *table.Table, rc *reclaim, loadedAt time.Time,
	loadCost time.Duration, job jobs.Job, or *OrphanReport) (settled []string, deferred map[string]time.Time, err error) {
	g, err := e.newDeletionGuard(ctx, tbl, rc, loadedAt, loadCost, job, true)
	if err != nil {
		return nil, nil, err
	}
	defer g.refs.close()
	e.phase("check", int64(len(job.OrphanCandidates)), 0)
	for _, c := range job.OrphanCandidates {
		e.advance(1, 0)
		j, err := g.judge(ctx, c.Location, !or.DryRun)
		if err != nil {
			return settled, deferred, err
		}
		switch j.verdict {
		case verdictReferenced:
			or.StillReferenced++
			settled = append(settled, c.Location)
		case verdictGone:
			settled = append(settled, c.Location)
		case verdictYoung:
			or.young(c.Location, j, g.margin)
			if deferred == nil {
				deferred = map[string]time.Time{}
			}
			deferred[c.Location] = j.modified
		case verdictRefused, verdictHidden:
			g.refuse(log, or, c.Location, j)
			if j.final {
				settled = append(settled, c.Location)
			}
		case verdictRule:
			// Counted and logged by the rule; a notification's claim
			// is not asked about again.
			or.RefusedFiles++
			settled = append(settled, c.Location)
		case verdictOrphan:
			or.Orphans = append(or.Orphans, OrphanFile{Location: j.canonical, Size: j.size})
			or.OrphanBytes += j.size
			if or.DryRun {
				continue
			}
			// The lease, per file: a replica cut off mid-pass stops
			// within one deletion, not at the end of the pass.
			if err := e.checkCommit(job.Table.String()); err != nil {
				return settled, deferred, err
			}
			if err := g.fs.Remove(j.canonical); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return settled, deferred, fmt.Errorf("delete orphan %s: %w", j.canonical, err)
			}
			or.DeletedFiles++
			settled = append(settled, c.Location)
		}
	}
	return settled, deferred, nil
}

// removeListedOrphans lists the table location and puts every file through
// the deletion guard, whose references are the only ones consulted (an
// unreferenced file younger than the margin is reported as too young,
// with when it becomes eligible, never deleted): the guard compares
// locations by identity (Iceberg Java writes local paths as file:/ and
// keeps percent escapes of partition values literally in file names, which
// iceberg-go's listing decodes; the Spark interop harness found it), and
// the listing's ages are from listing time, so the guard stats each
// candidate again. The listing runs beside the guard's read of the history:
// on an object store both are round trips, and iceberg-go's own orphan
// plan would walk the same history a second time.
func (e *Executor) removeListedOrphans(ctx context.Context, log *slog.Logger, tbl *table.Table, rc *reclaim, loadedAt time.Time,
	loadCost time.Duration, job jobs.Job, or *OrphanReport) error {
	if !rc.check.Holds(tbl.Location()) {
		// The location is not the table's own (it lies in another
		// table's directory): listing it would offer every file there.
		rc.refuse(&scope.Refusal{Rule: scope.OutsideTable, Location: tbl.Location(),
			Detail: "the table's location is not one of its roots; not listed"})
		return nil
	}
	e.phase("list", 0, 0)
	listed := make(chan listing, 1)
	listCtx, stopListing := context.WithCancel(ctx)
	defer stopListing()
	go func() { listed <- listFiles(listCtx, tbl) }()
	g, err := e.newDeletionGuard(ctx, tbl, rc, loadedAt, loadCost, job, false)
	if err != nil {
		stopListing()
		<-listed
		return err
	}
	defer g.refs.close()
	l := <-listed
	if l.err != nil {
		return fmt.Errorf("list table location: %w", l.err)
	}
	e.phase("check", int64(len(l.paths)), 0)
	for _, path := range l.paths {
		e.advance(1, 0)
		j, err := g.judge(ctx, path, !or.DryRun)
		if err != nil {
			return err
		}
		switch j.verdict {
		case verdictHidden, verdictGone, verdictReferenced:
			// Hidden files (.crc sidecars, _temporary directories) are not
			// orphans, as in Spark's remove_orphan_files: never reported,
			// never deleted. Referenced ones are the table's live files.
		case verdictOtherTable:
			// A nested table's files: its own cleanup's, never this one's.
			or.OtherTables++
		case verdictRule:
			or.RefusedFiles++
		case verdictYoung:
			or.young(path, j, g.margin)
		case verdictRefused:
			g.refuse(log, or, path, j)
		case verdictOrphan:
			or.Orphans = append(or.Orphans, OrphanFile{Location: j.canonical, Size: j.size})
			or.OrphanBytes += j.size
			if or.DryRun {
				continue
			}
			if err := e.checkCommit(job.Table.String()); err != nil {
				return err
			}
			if err := g.fs.Remove(j.canonical); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return fmt.Errorf("delete orphan %s: %w", j.canonical, err)
			}
			or.DeletedFiles++
		}
	}
	return nil
}

// listing is the files of a table location, or why it could not list.
type listing struct {
	paths []string
	err   error
}

// listFiles lists every file under tbl's location, in the listing's
// order. Their ages are the guard's to judge, from a stat: a file younger
// than the margin is reported, not skipped.
func listFiles(ctx context.Context, tbl *table.Table) listing {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return listing{err: fmt.Errorf("open table io: %w", err)}
	}
	lister, ok := fs.(iceio.ListableIO)
	if !ok {
		return listing{err: fmt.Errorf("%T cannot list, so no orphan can be found by listing", fs)}
	}
	var l listing
	l.err = lister.WalkDir(tbl.Location(), func(path string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.IsDir() {
			l.paths = append(l.paths, path)
		}
		return nil
	})
	return l
}

// locations is every referenced location, by identity, plus the table's
// metadata files (current and in the log).
func (r reachableFiles) locations(tbl *table.Table) map[string]bool {
	out := map[string]bool{}
	for _, set := range []map[string]bool{r.manifestLists, r.manifests, r.data, r.posDeletes, r.eqDeletes, r.stats} {
		for loc := range set {
			out[location.Identity(loc)] = true
		}
	}
	out[location.Identity(tbl.MetadataLocation())] = true
	for entry := range tbl.Metadata().PreviousFiles() {
		out[location.Identity(entry.MetadataFile)] = true
	}
	return out
}
