package executor_test

// Benchmarks of snapshot expiry and orphan cleanup planning on a
// table with 10,000 snapshots and 100,000 data files, in the embedded SQLite
// catalog on local disk.
//
//	go test -run '^$' -bench 'ExpiryPlanning|OrphanPlanning' -benchtime 1x -count 3 ./executor/
//
// The table is built once per benchmark function (not per sub-benchmark or
// per -count repetition: with sub-benchmarks the parent runs once and each
// leaf is repeated), with fabricated data-file entries
// (Transaction.AddDataFiles + iceberg.NewDataFileBuilder) committed in
// chunks of maintChunk snapshots per catalog commit. Its shape is that of a
// streaming table whose manifests are kept in check: maintAppends appends of
// maintFilesPer files each (one new manifest per append: fast append), and
// after every maintRewriteEvery appends a manifest rewrite (REPLACE
// snapshot) merging those appends' small manifests into one, as reactor's
// manifest job would. -short builds a tenth of it, for a quick check.
//
// Nothing is timed while building. See BENCHMARKS.md section 6 for the
// numbers measured on the reference machine.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

const (
	maintAppends      = 10_000 // append snapshots
	maintFilesPer     = 10     // data files per append: 100,000 in all
	maintRewriteEvery = 100    // appends merged by each manifest rewrite
	maintChunk        = 500    // snapshots staged per catalog commit while building
	maintPartitions   = 10
	maintStrays       = 1_000 // unreferenced files (failed writes) for orphan cleanup

	expiryYAML = "defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1}"
	// %d: the snapshots to keep (all but the oldest trimmed).
	expiryTrimYAML = "defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: %d, expire_deletion_delay: 1ms}"
	// A dry run; every file on disk is made two hours old, so only being
	// referenced protects a file from the 1h margin.
	orphanDryYAML = "defaults: {orphan_margin: 1h, orphan_margin_floor: 1h, orphan_delete: false}"
)

// maintTable is the big table of these benchmarks and what it holds.
type maintTable struct {
	ctx  context.Context
	cat  catalog.Catalog
	db   *sql.DB // the catalog's SQLite database, to restore its entry
	exec *executor.Executor
	dir  string // the table location on local disk
	// appends, snapshots and data files in the table; manifests and
	// manifest lists on disk (all referenced by some snapshot).
	appends, snapshots, dataFiles, manifests, manifestLists int
	// dataPaths are the fabricated data files' locations.
	dataPaths []string
	built     time.Duration
}

func buildMaintTable(b *testing.B) *maintTable {
	b.Helper()
	start := time.Now()
	ctx := b.Context()
	dir := b.TempDir()
	cat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if c, ok := cat.(io.Closer); ok {
			_ = c.Close()
		}
	})
	props, err := embedded.CatalogProperties(dir)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open(props[sqlcat.DriverKey], props["uri"])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	tbl, err := streamwriter.CreateTable(ctx, cat, ident, nil)
	if err != nil {
		b.Fatal(err)
	}
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	appends := maintAppends
	if testing.Short() {
		appends /= 10
	}
	mt := &maintTable{ctx: ctx, cat: cat, db: db, exec: newExecutor(b, executor.Options{Catalog: cat, Logger: log, Metrics: metrics.New()}),
		dir: strings.TrimPrefix(tbl.Location(), "file://"), appends: appends}
	spec := tbl.Spec()
	small := func(m iceberg.ManifestFile) bool { return m.ExistingDataFiles() == 0 }
	oneManifest := func(iceberg.DataFile) any { return 0 }
	for done := 0; done < appends; {
		txn := tbl.NewTransaction()
		for i := 0; i < maintChunk && done < appends; i++ {
			files := make([]iceberg.DataFile, maintFilesPer)
			for j := range files {
				part := fmt.Sprintf("c%02d", len(mt.dataPaths)%maintPartitions)
				loc := fmt.Sprintf("%s/data/category=%s/bench-%09d.parquet", tbl.Location(), part, len(mt.dataPaths))
				bld, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, loc,
					iceberg.ParquetFile, map[int]any{1000: part}, nil, nil, 100, 1<<20)
				if err != nil {
					b.Fatal(err)
				}
				files[j] = bld.Build()
				mt.dataPaths = append(mt.dataPaths, loc)
			}
			// The duplicate check would scan every live file per append;
			// the paths are unique by construction.
			if err := txn.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck()); err != nil {
				b.Fatal(err)
			}
			done++
			if done%maintRewriteEvery == 0 {
				res, err := txn.RewriteManifests(ctx, table.WithRewriteManifestPredicate(small),
					table.WithRewriteManifestClusterBy(oneManifest))
				if err != nil {
					b.Fatal(err)
				}
				if len(res.RewrittenManifests) != maintRewriteEvery || len(res.AddedManifests) != 1 {
					b.Fatalf("manifest rewrite merged %d manifests into %d, want %d into 1",
						len(res.RewrittenManifests), len(res.AddedManifests), maintRewriteEvery)
				}
			}
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	mt.snapshots = len(tbl.Metadata().Snapshots())
	mt.dataFiles = len(mt.dataPaths)
	if want := appends + appends/maintRewriteEvery; mt.snapshots != want {
		b.Fatalf("built %d snapshots, want %d", mt.snapshots, want)
	}
	if got := tbl.CurrentSnapshot().Summary.Properties.GetInt("total-data-files", -1); got != mt.dataFiles {
		b.Fatalf("current snapshot has %d data files, want %d", got, mt.dataFiles)
	}
	entries, err := os.ReadDir(filepath.Join(mt.dir, "metadata"))
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name(), "snap-") && strings.HasSuffix(e.Name(), ".avro"):
			mt.manifestLists++
		case strings.HasSuffix(e.Name(), ".avro"):
			mt.manifests++
		}
	}
	mt.built = time.Since(start)
	b.Logf("built %d snapshots (%d appends of %d files, %d manifest rewrites), %d data files, %d manifests, %d manifest lists in %v",
		mt.snapshots, appends, maintFilesPer, appends/maintRewriteEvery, mt.dataFiles, mt.manifests, mt.manifestLists, mt.built.Round(time.Second))
	return mt
}

func (mt *maintTable) load(b *testing.B, id table.Identifier) *table.Table {
	b.Helper()
	tbl, err := mt.cat.LoadTable(mt.ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}

func (mt *maintTable) report(b *testing.B) {
	b.ReportMetric(float64(mt.snapshots), "snapshots")
	b.ReportMetric(float64(mt.dataFiles), "files")
}

// maintJob builds a job of the given kind for table id with settings from
// yaml, as the planner would dispatch it.
func maintJob(b *testing.B, tbl *table.Table, id table.Identifier, kind jobkind.Kind, yaml string) jobs.Job {
	b.Helper()
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	name := strings.Join(id, ".")
	return jobs.Job{
		ID:       "bench-" + name,
		Kind:     kind,
		Table:    tablename.Of(id),
		Settings: cfg.For(name, tbl.Properties()),
	}
}

// errCommitRefused is what refusingCatalog answers every commit with.
var errCommitRefused = errors.New("benchmark: commit refused")

// refusingCatalog is the real catalog for reads; every commit fails. An
// expiry job run through it does everything up to the commit (load, stage,
// guard, read the history) and stops there: the dry form of expiry.
type refusingCatalog struct{ catalog.Catalog }

func (c refusingCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) { return tbl.FS(ctx) }, c), nil
}

func (refusingCatalog) CommitTable(context.Context, table.Identifier, []table.Requirement, []table.Update) (table.Metadata, string, error) {
	return nil, "", errCommitRefused
}

// pinCatalogEntry remembers the table's entry in the SQLite catalog (its
// current and previous metadata locations) and returns a function that puts
// it back, undoing a commit made since. The SQL catalog has no
// RegisterTable, and a copy made with AddSnapshot updates is refused (its
// snapshots would be older than the new metadata), hence the row update. Together with saveMetadataFiles it
// returns the table to the state it was in, so that a real expiry can run
// on the same table at every iteration.
func (mt *maintTable) pinCatalogEntry(b *testing.B) (restore func()) {
	b.Helper()
	const where = " WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"
	key := []any{embedded.CatalogName, "db", "events"}
	var cur, prev sql.NullString
	if err := mt.db.QueryRowContext(mt.ctx, "SELECT metadata_location, previous_metadata_location FROM iceberg_tables"+where,
		key...).Scan(&cur, &prev); err != nil {
		b.Fatal(err)
	}
	return func() {
		b.Helper()
		res, err := mt.db.ExecContext(mt.ctx, "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?"+where,
			append([]any{cur, prev}, key...)...)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			b.Fatalf("restored %d catalog rows (%v), want 1", n, err)
		}
	}
}

// saveMetadataFiles hard-links every file under the table's metadata/ into
// a backup directory (under the same temporary directory, so on the same
// file system) and returns a function that puts back what was deleted since
// and removes what was added (the metadata file of the expiry's commit).
func (mt *maintTable) saveMetadataFiles(b *testing.B) (restore func()) {
	b.Helper()
	dir := filepath.Join(mt.dir, "metadata")
	backup := b.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	saved := map[string]bool{}
	for _, e := range entries {
		if err := os.Link(filepath.Join(dir, e.Name()), filepath.Join(backup, e.Name())); err != nil {
			b.Fatal(err)
		}
		saved[e.Name()] = true
	}
	return func() {
		b.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if !saved[e.Name()] {
				// A new file, or reactor's pending-deletion directory
				// (its batches are gone once the pass ran).
				if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
					b.Fatal(err)
				}
			}
			delete(saved, e.Name())
		}
		for name := range saved { // deleted since: put back
			if err := os.Link(filepath.Join(backup, name), filepath.Join(dir, name)); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.RemoveAll(backup); err != nil {
			b.Fatal(err)
		}
	}
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// The runs of BenchmarkExpiryPlanning/jobs, each iteration.
const (
	runNoCommit = iota
	runJob
	runJobCold
	runJobWalk
	runTrim
	runTrimWalk
	runs
)

// trimmed is how many of the oldest snapshots the trim runs expire.
const trimmed = 100

// BenchmarkExpiryPlanning: what snapshot expiry costs on the big table,
// keeping the newest snapshot only (retain_last 1, a 1 ms horizon, no
// reader margin: every other snapshot goes).
//
//   - load-table: the catalog's LoadTable (parses every snapshot), which
//     every job below starts with.
//   - stage: iceberg-go's ExpireSnapshots(WithOlderThan(0),
//     WithRetainLast(1)) + StagedTable() on a loaded table; no commit.
//   - jobs: reactor's expire_snapshots job six ways, each timed within
//     every iteration (ns/op is their sum; read the metrics). With the
//     executor's history index synced, untimed, to the table as built (what
//     the jobs before keep it at in reactor run): no-commit-s/op, the job
//     through a catalog that refuses the commit (load, stage, the ref guard:
//     the dry form of expiry); job-s/op, the real job (the above, the
//     commit, the index synced to the expired table, which tells what went,
//     and the deletion of the 20,099 unlinked files behind a check that
//     nothing references them); trim-s/op and pass-s/op, an hourly expiry
//     of a streaming table: the oldest 100 snapshots expire with
//     expire_deletion_delay (the job lists their 200 files in a pending
//     batch), then the deletion pass deletes them once nothing in the
//     10,000 remaining snapshots references them. job-cold-s/op: the real
//     job on a new executor, whose index is built from the whole history.
//     job-walk-s/op, trim-walk-s/op, pass-walk-s/op: the same jobs without
//     history indexes, walking every manifest list and manifest of the
//     history for each question, as reactor did before it kept them. After
//     each real run (untimed) the table is put back as it was: the catalog
//     entry is reset to the old metadata file and the deleted files are
//     re-linked from hard links taken before.
func BenchmarkExpiryPlanning(b *testing.B) {
	mt := buildMaintTable(b)
	b.Run("load-table", func(b *testing.B) {
		runtime.GC()
		for b.Loop() {
			mt.load(b, ident)
		}
		mt.report(b)
	})
	b.Run("stage", func(b *testing.B) {
		runtime.GC()
		for b.Loop() {
			b.StopTimer()
			tbl := mt.load(b, ident)
			b.StartTimer()
			txn := tbl.NewTransaction()
			if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
				b.Fatal(err)
			}
			staged, err := txn.StagedTable()
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if got := len(staged.Metadata().Snapshots()); got != 1 {
				b.Fatalf("staged expiry keeps %d snapshots, want 1", got)
			}
			b.StartTimer()
		}
		mt.report(b)
	})
	// The jobs are measured in turn within every iteration (in an order
	// that rotates between iterations), so that their ratios compare runs
	// seconds apart: this machine's load drifts more than that between
	// sub-benchmarks run minutes apart.
	b.Run("jobs", func(b *testing.B) {
		quiet := slog.New(slog.DiscardHandler)
		dry := newExecutor(b, executor.Options{Catalog: refusingCatalog{mt.cat}, Logger: quiet, Metrics: metrics.New()})
		walking := newExecutor(b, executor.Options{Catalog: mt.cat, Logger: quiet, Metrics: metrics.New()})
		executor.WalkWholeHistory(walking)
		ran := make([]jobs.Job, 2)
		trimYAML := fmt.Sprintf(expiryTrimYAML, mt.snapshots-trimmed)
		for k, yaml := range []string{expiryYAML, trimYAML} {
			ran[k] = maintJob(b, mt.load(b, ident), ident, jobkind.ExpireSnapshots, yaml)
			ran[k].ExpireOlderThan = time.Millisecond
		}
		// warm syncs e's history index with the table as built, untimed:
		// what the jobs before this one (expiries, orphan cleanups) keep
		// it at in reactor run.
		warm := func(e *executor.Executor) {
			if err := executor.SyncHistory(mt.ctx, e, mt.load(b, ident)); err != nil {
				b.Fatal(err)
			}
		}
		timed := func(f func()) time.Duration {
			runtime.GC()
			b.StartTimer()
			start := time.Now()
			f()
			took := time.Since(start)
			b.StopTimer()
			return took
		}
		// expire runs a committed expiry with e and checks its report:
		// every snapshot but the newest, or with trim the oldest trimmed.
		expire := func(e *executor.Executor, job jobs.Job, trim bool) jobs.Result {
			res, rep := e.Run(mt.ctx, job)
			if res.Outcome != jobs.Succeeded {
				b.Fatalf("expiry: %v %v", res.Outcome, res.Err)
			}
			x := rep.Expiry
			// Every append's small manifest was merged away: only the
			// current snapshot's merged manifests remain, and no data file
			// goes. The oldest trimmed snapshots are the first appends,
			// whose small manifests the first rewrite merged.
			want := mt.snapshots - 1
			manifests := mt.appends
			if trim {
				want, manifests = trimmed, trimmed
			}
			if x.ExpiredSnapshots != want || x.DeletedManifestLists != want || x.DeletedManifests != manifests || x.DeletedDataFiles != 0 {
				b.Fatalf("report %+v: want %d snapshots and manifest lists, %d manifests, no data file", x, want, manifests)
			}
			if trim != x.Deferred || trim != (len(res.PendingDeletes) == 1) {
				b.Fatalf("deletion deferred: %v, batches %v (deferral configured: %v)", x.Deferred, res.PendingDeletes, trim)
			}
			return res
		}
		// pass runs the deletion pass of the batch res left.
		pass := func(e *executor.Executor, res jobs.Result) {
			job := maintJob(b, mt.load(b, ident), ident, jobkind.DeleteExpiredFiles, trimYAML)
			job.PendingDeletes = res.PendingDeletes
			got, rep := e.Run(mt.ctx, job)
			if got.Outcome != jobs.Succeeded || len(got.PendingDeletes) != 0 {
				b.Fatalf("deletion pass: %v %v, %d batches left", got.Outcome, got.Err, len(got.PendingDeletes))
			}
			if n := rep.Expiry.Files(); n != 2*trimmed {
				b.Fatalf("deletion pass deleted %d files, want %d", n, 2*trimmed)
			}
		}
		// run runs job k of the iteration, with untimed setup and restore
		// around it, and returns how long its timed parts took.
		run := func(k int) (took [2]time.Duration) {
			b.StopTimer()
			defer b.StartTimer()
			if k == runNoCommit {
				warm(dry)
				took[0] = timed(func() {
					res, _ := dry.Run(mt.ctx, ran[0])
					if res.Outcome != jobs.Failed || !errors.Is(res.Err, errCommitRefused) {
						b.Fatalf("expiry without commit: %v %v, want the refused commit", res.Outcome, res.Err)
					}
				})
				return took
			}
			restoreFiles := mt.saveMetadataFiles(b)
			restoreEntry := mt.pinCatalogEntry(b)
			defer restoreFiles()
			defer restoreEntry()
			switch k {
			case runJob:
				warm(mt.exec)
				took[0] = timed(func() { expire(mt.exec, ran[0], false) })
			case runJobCold:
				cold := newExecutor(b, executor.Options{Catalog: mt.cat, Logger: quiet, Metrics: metrics.New()})
				took[0] = timed(func() { expire(cold, ran[0], false) })
			case runJobWalk:
				took[0] = timed(func() { expire(walking, ran[0], false) })
			case runTrim:
				warm(mt.exec)
				var res jobs.Result
				took[0] = timed(func() { res = expire(mt.exec, ran[1], true) })
				time.Sleep(2 * time.Millisecond) // the batch is due
				took[1] = timed(func() { pass(mt.exec, res) })
			case runTrimWalk:
				var res jobs.Result
				took[0] = timed(func() { res = expire(walking, ran[1], true) })
				time.Sleep(2 * time.Millisecond)
				took[1] = timed(func() { pass(walking, res) })
			}
			return took
		}
		var took [runs][2]time.Duration
		var walkPerJob, coldPerJob, trimWalkPerTrim, passWalkPerPass []float64
		i := 0
		for b.Loop() {
			var this [runs][2]time.Duration
			for k := range runs {
				which := (i + k) % runs
				this[which] = run(which)
				took[which][0] += this[which][0]
				took[which][1] += this[which][1]
			}
			walkPerJob = append(walkPerJob, this[runJobWalk][0].Seconds()/this[runJob][0].Seconds())
			coldPerJob = append(coldPerJob, this[runJobCold][0].Seconds()/this[runJob][0].Seconds())
			trimWalkPerTrim = append(trimWalkPerTrim, this[runTrimWalk][0].Seconds()/this[runTrim][0].Seconds())
			passWalkPerPass = append(passWalkPerPass, this[runTrimWalk][1].Seconds()/this[runTrim][1].Seconds())
			i++
		}
		n := float64(b.N)
		b.ReportMetric(took[runNoCommit][0].Seconds()/n, "no-commit-s/op")
		b.ReportMetric(took[runJob][0].Seconds()/n, "job-s/op")
		b.ReportMetric(took[runJobCold][0].Seconds()/n, "job-cold-s/op")
		b.ReportMetric(took[runJobWalk][0].Seconds()/n, "job-walk-s/op")
		b.ReportMetric(took[runTrim][0].Seconds()/n, "trim-s/op")
		b.ReportMetric(took[runTrim][1].Seconds()/n, "pass-s/op")
		b.ReportMetric(took[runTrimWalk][0].Seconds()/n, "trim-walk-s/op")
		b.ReportMetric(took[runTrimWalk][1].Seconds()/n, "pass-walk-s/op")
		b.ReportMetric(median(walkPerJob), "job-walk/job")
		b.ReportMetric(median(coldPerJob), "job-cold/job")
		b.ReportMetric(median(trimWalkPerTrim), "trim-walk/trim")
		b.ReportMetric(median(passWalkPerPass), "pass-walk/pass")
		b.ReportMetric(float64(mt.appends+mt.snapshots-1), "files-unreachable")
		mt.report(b)
	})
	// The table is back as built: every snapshot, and every file the
	// history references (a walk of it fails on a missing file).
	tbl := mt.load(b, ident)
	if got := len(tbl.Metadata().Snapshots()); got != mt.snapshots {
		b.Fatalf("table has %d snapshots after the benchmark, want %d", got, mt.snapshots)
	}
	exec := newExecutor(b, executor.Options{Catalog: refusingCatalog{mt.cat}, Logger: slog.New(slog.DiscardHandler), Metrics: metrics.New()})
	job := maintJob(b, tbl, ident, jobkind.ExpireSnapshots, expiryYAML)
	job.ExpireOlderThan = time.Millisecond
	if res, _ := exec.Run(mt.ctx, job); !errors.Is(res.Err, errCommitRefused) {
		b.Fatalf("history after the benchmark: %v %v", res.Outcome, res.Err)
	}
}

// BenchmarkOrphanPlanning: notification-driven orphan cleanup against a full
// listing, on the big table with maintStrays unreferenced files (failed
// writes) under data/. Every data file the table references exists on disk
// (a few bytes each, not Parquet) so that a listing sees the real number of
// objects; every file is two hours old (margin 1h). Both jobs are dry runs
// and must find exactly the strays.
//
// Each iteration of candidates=N times three things (ns/op is their sum;
// read the metrics):
//
//   - tracking-s/op: an OrphansFromTracking job with the strays as the
//     tracked candidates, as the planner dispatches it when bucket
//     notifications tracked the table's unconfirmed files. It checks them
//     against the executor's history index (synced, untimed, before the
//     first iteration, as the jobs before keep it in reactor run); no
//     listing. tracking-walk-s/op: the same without history indexes,
//     walking the whole history as reactor did before it kept them.
//   - listing-s/op: an OrphansFromListing job: iceberg-go's PlanOrphanFiles
//     (its own walk of the history, in parallel, beside a walk of the
//     table's directory tree).
//   - refs-only-s/op: PlanOrphanFiles over an empty directory: iceberg-go's
//     history walk alone, to split listing into walking and listing.
//   - listing/tracking: the ratio of the two jobs within one iteration
//     (median over the iterations).
func BenchmarkOrphanPlanning(b *testing.B) {
	mt := buildMaintTable(b)
	start := time.Now()
	old := time.Now().Add(-2 * time.Hour)
	var cands []jobs.OrphanCandidate
	write := func(loc string) {
		p := strings.TrimPrefix(loc, "file://")
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				b.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, loc := range mt.dataPaths {
		write(loc)
	}
	location := mt.load(b, ident).Location()
	var strays []string
	for i := range maintStrays {
		loc := fmt.Sprintf("%s/data/category=c%02d/00000-%d-failed-write-%05d.parquet", location, i%maintPartitions, i, i)
		write(loc)
		strays = append(strays, strings.TrimPrefix(loc, "file://"))
		cands = append(cands, jobs.OrphanCandidate{Location: loc, Size: 1, Created: old})
	}
	slices.Sort(strays)
	onDisk := 0
	err := filepath.WalkDir(mt.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		onDisk++
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d data files and %d strays; %d files under the table location in all (%v)",
		len(mt.dataPaths), maintStrays, onDisk, time.Since(start).Round(time.Second))

	// orphans checks that a dry run found exactly the strays.
	orphans := func(b *testing.B, rep executor.Report) {
		var got []string
		for _, o := range rep.Orphans.Orphans {
			got = append(got, strings.TrimPrefix(o.Location, "file://"))
		}
		slices.Sort(got)
		if !slices.Equal(got, strays) || rep.Orphans.DeletedFiles != 0 {
			b.Fatalf("found %d orphans (%d deleted), want exactly the %d strays and a dry run",
				len(got), rep.Orphans.DeletedFiles, len(strays))
		}
	}
	report := func(b *testing.B) {
		mt.report(b)
		b.ReportMetric(float64(onDisk), "objects")
	}
	// The three are measured in turn within every iteration (in an order
	// that rotates between iterations), so that each ratio compares runs
	// seconds apart: this machine's load drifts more than that between
	// sub-benchmarks run minutes apart.
	b.Run(fmt.Sprintf("candidates=%d", len(cands)), func(b *testing.B) {
		tracked := maintJob(b, mt.load(b, ident), ident, jobkind.RemoveOrphans, orphanDryYAML)
		tracked.OrphanSource, tracked.OrphanCandidates = jobs.OrphansFromTracking, cands
		listed := maintJob(b, mt.load(b, ident), ident, jobkind.RemoveOrphans, orphanDryYAML)
		listed.OrphanSource = jobs.OrphansFromListing
		empty := "file://" + b.TempDir()
		walking := newExecutor(b, executor.Options{Catalog: mt.cat, Logger: slog.New(slog.DiscardHandler), Metrics: metrics.New()})
		executor.WalkWholeHistory(walking)
		if err := executor.SyncHistory(mt.ctx, mt.exec, mt.load(b, ident)); err != nil {
			b.Fatal(err) // what the jobs before keep the index at
		}
		track := func(e *executor.Executor) func() {
			return func() {
				res, rep := e.Run(mt.ctx, tracked)
				if res.Outcome != jobs.Succeeded {
					b.Fatalf("tracked orphans: %v %v", res.Outcome, res.Err)
				}
				orphans(b, rep)
			}
		}
		runs := []func(){
			track(mt.exec),
			track(walking),
			func() {
				res, rep := mt.exec.Run(mt.ctx, listed)
				if res.Outcome != jobs.Succeeded {
					b.Fatalf("listed orphans: %v %v", res.Outcome, res.Err)
				}
				orphans(b, rep)
			},
			func() {
				tbl := mt.load(b, ident)
				plan, err := tbl.PlanOrphanFiles(mt.ctx, table.WithLocation(empty), table.WithFilesOlderThan(time.Hour))
				if err != nil {
					b.Fatal(err)
				}
				if len(plan.OrphanFiles()) != 0 {
					b.Fatalf("%d orphans in an empty directory", len(plan.OrphanFiles()))
				}
			},
		}
		var took [4]time.Duration
		var ratios, walkRatios []float64
		i := 0
		for b.Loop() {
			var this [4]time.Duration
			for k := range runs {
				which := (i + k) % len(runs)
				runtime.GC()
				start := time.Now()
				runs[which]()
				this[which] = time.Since(start)
				took[which] += this[which]
			}
			ratios = append(ratios, this[2].Seconds()/this[0].Seconds())
			walkRatios = append(walkRatios, this[1].Seconds()/this[0].Seconds())
			i++
		}
		n := float64(b.N)
		b.ReportMetric(took[0].Seconds()/n, "tracking-s/op")
		b.ReportMetric(took[1].Seconds()/n, "tracking-walk-s/op")
		b.ReportMetric(took[2].Seconds()/n, "listing-s/op")
		b.ReportMetric(took[3].Seconds()/n, "refs-only-s/op")
		b.ReportMetric(median(ratios), "listing/tracking")
		b.ReportMetric(median(walkRatios), "tracking-walk/tracking")
		report(b)
	})
}
