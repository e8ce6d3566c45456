package executor

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/tablename"
)

// The one deletion rule (docs/design.md#rule-own-table). Every path that
// deletes a table's file asks it: expiry's unlinked files (at once or from
// a due batch), a crashed expiry's intent, a killed job's outputs, orphans,
// metadata files the table's log dropped, and a job's own abandoned
// outputs. Its placement half is package scope's — under the table's own
// roots, claimed by no other known table, gc.enabled not false, the
// metadata whole — and the rest stays where each path already had it: the
// whole history's references, the lease per file, the margins. A refused
// file is logged once, counted in reactor_deletions_refused_total by rule,
// reported with the job, and never retried: it is dropped from whatever
// named it.

// knownTTL is how long a registry the executor built itself (no planner
// feeding one: a one-shot command, a test) is trusted before a deletion
// pass lists the catalog again.
const knownTTL = 30 * time.Second

// registryWait bounds how long a deletion pass waits for reactor run's
// first location index (built at start; retried every few seconds while
// the catalog is unreachable).
const registryWait = 30 * time.Second

// refusalsShown bounds the refused files a report names and the per-pass
// warnings; the rest go to debug, and the counts hold them all.
const refusalsShown = 20

// Refusals are the deletions the rule refused in one job.
type Refusals struct {
	// ByRule counts refused files by the rule they broke.
	ByRule map[scope.Rule]int `json:"by_rule,omitempty"`
	// Files names the first refused files and why.
	Files []RefusedDeletion `json:"files,omitempty"`
	// Records counts reactor records refused (unsigned, forged, another
	// table's, oversized), by reason; each is left where it is.
	Records map[string]int `json:"records,omitempty"`
}

// RefusedDeletion is one refused file.
type RefusedDeletion struct {
	Location string     `json:"location"`
	Rule     scope.Rule `json:"rule"`
	Detail   string     `json:"detail,omitempty"`
}

// Total is how many files were refused.
func (r Refusals) Total() int {
	n := 0
	for _, c := range r.ByRule {
		n += c
	}
	return n
}

// registry is where the executor's rule learns which tables exist.
type registry struct {
	mu sync.Mutex
	// known is the planner's (reactor run) or the executor's own.
	known *scope.Known
	// own: built by the executor from the catalog, at builtAt.
	own     bool
	builtAt time.Time
}

// knownTables returns the registry of tables, ready: the one reactor run
// fills (waited for), or one listed from the catalog now and then.
func (e *Executor) knownTables(ctx context.Context) (*scope.Known, error) {
	r := &e.registry
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.own {
		// A job does not hold its slot for long waiting: it fails, and
		// the planner schedules it again.
		wctx, cancel := context.WithTimeout(ctx, registryWait)
		defer cancel()
		if err := r.known.Wait(wctx); err != nil {
			return nil, err
		}
		return r.known, nil
	}
	if r.known.IsReady() && time.Since(r.builtAt) < knownTTL {
		return r.known, nil
	}
	all, err := scope.Build(ctx, e.cat, nil)
	if err != nil {
		return nil, fmt.Errorf("list the catalog's tables (no file is deleted without knowing every table's location): %w", err)
	}
	r.known.Replace(all)
	r.builtAt = time.Now()
	return r.known, nil
}

// reclaim is the rule for one pass over one table: built once from the
// metadata the pass loaded from the catalog.
type reclaim struct {
	e     *Executor
	log   *slog.Logger
	table string
	check scope.Check
	// mu guards refusals: a pass deletes on several goroutines.
	mu       sync.Mutex
	refusals *Refusals
}

// newReclaim prepares the rule for a pass over tbl, which the pass just
// loaded from the catalog; refusals collects what it refuses.
func (e *Executor) newReclaim(ctx context.Context, log *slog.Logger, tbl *table.Table, refusals *Refusals) (*reclaim, error) {
	known, err := e.knownTables(ctx)
	if err != nil {
		return nil, err
	}
	name := tableName(tbl)
	rc := &reclaim{e: e, log: log, table: name, check: known.Check(name, tbl.Metadata()), refusals: refusals}
	if dropped := rc.check.Dropped(); len(dropped) > 0 {
		log.Warn("some of the table's roots are not its own: nothing there is deleted", "not_roots", dropped)
	}
	return rc, nil
}

// within narrows rc to the roots a record kept (see scope.Check.Within).
func (rc *reclaim) within(roots []string) *reclaim {
	return &reclaim{e: rc.e, log: rc.log, table: rc.table, check: rc.check.Within(roots), refusals: rc.refusals}
}

// refusedWhole is the refusal that stops the whole pass (gc.enabled false,
// partial metadata), or nil.
func (rc *reclaim) refusedWhole() *scope.Refusal { return rc.check.Refused() }

// allow is the placement rule for loc: its canonical spelling, or false
// after counting and logging the refusal.
func (rc *reclaim) allow(loc string) (string, bool) {
	canonical, refusal := rc.check.Allow(loc)
	if refusal != nil {
		rc.refuse(refusal)
		return "", false
	}
	return canonical, true
}

// refuse counts and logs one refused deletion.
func (rc *reclaim) refuse(r *scope.Refusal) {
	rc.e.met.DeletionsRefused.WithLabelValues(rc.table, string(r.Rule)).Inc()
	rc.mu.Lock()
	if rc.refusals.ByRule == nil {
		rc.refusals.ByRule = map[scope.Rule]int{}
	}
	rc.refusals.ByRule[r.Rule]++
	n := rc.refusals.Total()
	if len(rc.refusals.Files) < refusalsShown {
		rc.refusals.Files = append(rc.refusals.Files, RefusedDeletion{Location: bounded(r.Location), Rule: r.Rule, Detail: bounded(r.Detail)})
	}
	rc.mu.Unlock()
	level := slog.LevelWarn
	if n > refusalsShown {
		level = slog.LevelDebug
	}
	rc.log.Log(context.Background(), level, "deletion refused: file kept", "rule", r.Rule, "location", bounded(r.Location),
		"detail", bounded(r.Detail))
}

// refuseRecord counts and logs a reactor record that did not verify. It is
// left where it is; this process logs it once.
func (e *Executor) refuseRecord(log *slog.Logger, name string, err error, refusals *Refusals) {
	var r *deletions.Refusal
	if !errors.As(err, &r) {
		return
	}
	if refusals.Records == nil {
		refusals.Records = map[string]int{}
	}
	refusals.Records[r.Reason]++
	if !e.refusedRecords.first(r.Location) {
		return
	}
	e.met.RecordsRefused.WithLabelValues(name, r.Reason).Inc()
	log.Error("reactor record refused: not acted on, left in place for an operator (docs/operations.md#refused-records)",
		"record", bounded(r.Location), "reason", r.Reason, "detail", bounded(r.Detail))
}

// seenOnce remembers which records this process has refused already, so
// each is logged and counted once however often a pass lists it.
type seenOnce struct {
	mu   sync.Mutex
	seen map[string]bool
}

// maxSeenRecords bounds the memory a flood of forged records may take;
// past it a refusal is logged again rather than remembered.
const maxSeenRecords = 100_000

func (s *seenOnce) first(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[key] {
		return false
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if len(s.seen) < maxSeenRecords {
		s.seen[key] = true
	}
	return true
}

// records are the table's records, signed and verified with the
// executor's keys.
func (e *Executor) records(fs iceio.IO, tbl *table.Table) deletions.Records {
	return e.keys.Records(fs, deletions.RefOf(tbl))
}

// removeOwn deletes files this job wrote and nothing references (a losing
// attempt's manifests and manifest list, an abandoned rewrite's outputs),
// under the placement rule without gc.enabled (the table never saw them),
// counting the deleted ones; all is false when one could not be deleted
// (one already gone counts as gone). tbl is the table as the job loaded it.
func (e *Executor) removeOwn(tbl *table.Table, fs iceio.IO, paths []string, log *slog.Logger) (n int, all bool) {
	all = true
	var check *scope.Check
	for _, p := range paths {
		if p == "" {
			continue
		}
		if check == nil {
			c := e.registry.known.Check(tableName(tbl), tbl.Metadata())
			check = &c
		}
		if r := check.Refused(); r != nil && r.Rule == scope.S3TablesRule {
			// The table bucket deletes nothing for reactor; AWS's
			// unreferenced file removal takes what nothing references.
			e.met.DeletionsRefused.WithLabelValues(tableName(tbl), string(r.Rule)).Add(float64(len(paths)))
			log.Info("files of this job that nothing references are left to S3 Tables' unreferenced file removal",
				"files", len(paths), "rule", r.Rule)
			return 0, false
		}
		canonical, refusal := check.AllowOwnOutput(p)
		if refusal != nil {
			all = false
			e.met.DeletionsRefused.WithLabelValues(tableName(tbl), string(refusal.Rule)).Inc()
			log.Warn("deletion refused: a file of this job kept; orphan cleanup may find it", "rule", refusal.Rule,
				"location", bounded(p), "detail", bounded(refusal.Detail))
			continue
		}
		if err := fs.Remove(canonical); err != nil {
			if !errors.Is(err, iofs.ErrNotExist) {
				all = false
				log.Warn("could not delete a file of this job that nothing references; orphan cleanup will find it", "path", p, "error", err)
			}
			continue
		}
		n++
	}
	return n, all
}

// removeOutputs deletes the files results wrote; it returns how many it
// deleted, their paths, and whether every one is gone.
func (e *Executor) removeOutputs(tbl *table.Table, fs iceio.IO, results []table.CompactionGroupResult, log *slog.Logger) (int, []string, bool) {
	var paths []string
	for _, gr := range results {
		for _, df := range gr.NewDataFiles {
			paths = append(paths, df.FilePath())
		}
	}
	n, all := e.removeOwn(tbl, fs, paths, log)
	return n, paths, all
}

// removePaths is removeOwn's count alone.
func (e *Executor) removePaths(tbl *table.Table, fs iceio.IO, paths []string, log *slog.Logger) int {
	n, _ := e.removeOwn(tbl, fs, paths, log)
	return n
}

// checkMetadataLog refuses to commit through iceberg-go on a table whose
// metadata log names a file the deletion rule would not let reactor delete
// while the table asks for old metadata files to be deleted after each
// commit (write.metadata.delete-after-commit.enabled): iceberg-go deletes
// the entries a commit pushes out of the log itself, unguarded, and the
// log is the table's writers' to fill. A table whose log holds only its
// own metadata files is never refused.
func (e *Executor) checkMetadataLog(tbl *table.Table) error {
	meta := tbl.Metadata()
	if !meta.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return nil
	}
	check := e.registry.known.Check(tableName(tbl), meta)
	for entry := range meta.PreviousFiles() {
		if _, refusal := check.AllowOwnOutput(entry.MetadataFile); refusal != nil {
			e.met.DeletionsRefused.WithLabelValues(tableName(tbl), string(refusal.Rule)).Inc()
			return fmt.Errorf("commit refused: the table deletes old metadata files after each commit (%s) and its metadata log names %s, which is not the table's to delete: %w",
				table.MetadataDeleteAfterCommitEnabledKey, bounded(entry.MetadataFile), refusal)
		}
	}
	return nil
}

// deleteExpiredFiles is the later pass of an expiry: for each due batch,
// every file is checked against the deletion rule and the table's whole
// history again (a rollback, a branch or a re-added file may reference it
// now) and deleted only if both allow; then the batch is removed. It is
// the one path that deletes what expiry unlinked (iceberg-go's post-commit
// deletion is never used, and orphan cleanup leaves pending files alone).
// A batch or intent that does not verify as reactor's own is refused: left
// in place, counted, never acted on, and not asked about again.
func (e *Executor) deleteExpiredFiles(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	var rep Report
	fail := func(err error, left []deletions.Ref) (jobs.Result, Report) {
		return jobs.Result{Outcome: jobs.Failed, Err: err, PendingDeletes: left}, rep
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return fail(fmt.Errorf("load table: %w", err), job.PendingDeletes)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(fmt.Errorf("open table io: %w", err), job.PendingDeletes)
	}
	rc, err := e.newReclaim(ctx, log, tbl, &rep.Refusals)
	if err != nil {
		return fail(err, job.PendingDeletes)
	}
	if r := rc.refusedWhole(); r != nil && r.Rule == scope.PartialMetadata {
		// Not the files' fault: the batches wait for a whole history.
		e.met.DeletionsRefused.WithLabelValues(job.Table.String(), string(r.Rule)).Inc()
		return fail(fmt.Errorf("deletion pass refused: %w", r), job.PendingDeletes)
	}
	e.recoverOutputsBefore(ctx, log, tbl, fs)
	recs := e.records(fs, tbl)
	now := time.Now()
	var left []deletions.Ref
	var gone int
	for i, ref := range job.PendingDeletes {
		if ref.Intent {
			rebuilt, err := e.recoverIntent(ctx, log, job, tbl, fs, &rep.Refusals, ref)
			if err != nil {
				return fail(err, append(left, job.PendingDeletes[i:]...))
			}
			left = append(left, rebuilt...)
			continue
		}
		b, err := recs.ReadBatch(ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue // another pass finished it
		}
		if errors.Is(err, deletions.ErrRefused) {
			e.refuseRecord(log, job.Table.String(), err, &rep.Refusals)
			continue
		}
		if err != nil {
			return fail(err, append(left, job.PendingDeletes[i:]...))
		}
		if b.Due.After(now) {
			// Never early, whatever the batch's name said.
			left = append(left, ref)
			continue
		}
		n, err := e.deleteUnlinked(ctx, log, tbl, fs, b.Files, rc.within(b.Roots), &rep.Expiry, &rep.Orphans)
		gone += n
		if err != nil {
			return fail(err, append(left, job.PendingDeletes[i:]...))
		}
		if err := recs.Remove(ref); err != nil {
			return fail(err, append(left, job.PendingDeletes[i:]...))
		}
	}
	if gone > 0 {
		// Only this pass deletes unlinked files: something outside
		// reactor removed these.
		log.Warn("files due for deletion were already gone", "files", gone)
	}
	log.Info("unlinked files deleted", "batches", len(job.PendingDeletes), "left", len(left), "deleted", rep.Expiry.Files(),
		"still_referenced", rep.Orphans.StillReferenced, "refused", rep.Refusals.Total())
	return jobs.Result{Outcome: jobs.Succeeded, PendingDeletes: left}, rep
}

// deleteUnlinked deletes the files the deletion rule rc allows that no
// snapshot, metadata file or statistics file of tbl's history references,
// counting them by kind in x and the referenced ones in or. It returns how
// many were already gone. On an object store it deletes storeConcurrency
// files at once (each a round trip or two); locally one at a time.
func (e *Executor) deleteUnlinked(ctx context.Context, log *slog.Logger, tbl *table.Table, fs iceio.IO, files []deletions.File,
	rc *reclaim, x *ExpiryCounts, or *OrphanReport) (int, error) {
	referenced, done, err := e.referencedBy(ctx, tbl, fs)
	if err != nil {
		return 0, fmt.Errorf("read table history: %w", err)
	}
	defer done()
	var (
		mu       sync.Mutex // guards gone, x, or, firstErr and referenced
		gone     int
		firstErr error
		stop     = make(chan struct{})
		next     = make(chan deletions.File)
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			close(stop)
		}
	}
	deleteOne := func(f deletions.File) {
		e.advance(1, 0)
		canonical, ok := rc.allow(f.Path)
		if !ok {
			return
		}
		mu.Lock()
		again := referenced(location.Identity(canonical))
		if again {
			or.StillReferenced++
		}
		mu.Unlock()
		if again {
			log.Info("an unlinked file is referenced again; kept", "path", f.Path)
			return
		}
		// The lease, per file: a replica cut off mid-pass stops within
		// the deletions in flight; the batch stays for the table's next
		// owner.
		if err := e.checkCommit(tablename.Format(tbl.Identifier())); err != nil {
			fail(err)
			return
		}
		err := fs.Remove(canonical)
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			fail(fmt.Errorf("delete %s: %w", canonical, err))
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			gone++
			return
		}
		x.count(f.Kind)
		or.DeletedFiles++
	}
	e.phase("delete", int64(len(files)), 0)
	for range max(storeConcurrency(fs), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				deleteOne(f)
			}
		}()
	}
feed:
	for _, f := range files {
		select {
		case next <- f:
		case <-stop:
			break feed
		}
	}
	close(next)
	wg.Wait()
	return gone, firstErr
}
