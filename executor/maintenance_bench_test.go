package executor_test

// Benchmarks of snapshot expiry and orphan cleanup planning (issue 5) on a
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

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

const (
	maintAppends      = 10_000 // append snapshots
	maintFilesPer     = 10     // data files per append: 100,000 in all
	maintRewriteEvery = 100    // appends merged by each manifest rewrite
	maintChunk        = 500    // snapshots staged per catalog commit while building
	maintPartitions   = 10
	maintStrays       = 1_000 // unreferenced files (failed writes) for orphan cleanup

	expiryYAML         = "defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1}"
	expiryDeferredYAML = "defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1, expire_deletion_delay: 1h}"
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
	mt := &maintTable{ctx: ctx, cat: cat, db: db, exec: executor.New(cat, log, metrics.New()),
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
func maintJob(b *testing.B, tbl *table.Table, id table.Identifier, kind planner.JobKind, yaml string) planner.Job {
	b.Helper()
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	name := strings.Join(id, ".")
	return planner.Job{
		ID:        "bench-" + name,
		Kind:      kind,
		Table:     id,
		TableName: name,
		Settings:  cfg.For(name, tbl.Properties()),
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
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
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

// BenchmarkExpiryPlanning: what snapshot expiry costs on the big table,
// keeping the newest snapshot only (retain_last 1, a 1 ms horizon, no
// reader margin: every other snapshot goes).
//
//   - load-table: the catalog's LoadTable (parses every snapshot), which
//     every job below starts with.
//   - stage: iceberg-go's ExpireSnapshots(WithOlderThan(0),
//     WithRetainLast(1)) + StagedTable() on a loaded table; no commit.
//   - jobs: reactor's expire_snapshots job three ways, each timed within
//     every iteration (ns/op is their sum; read the metrics):
//     no-commit-s/op, the job through a catalog that refuses the commit:
//     load, stage, the min_reader_margin/ref guard and the walk of the
//     whole history (every manifest list, every distinct manifest) that the
//     job does before committing; the dry form of expiry. job-s/op, the
//     real job: the above plus the commit, iceberg-go's post-commit
//     deletion of the unreachable manifests and manifest lists, and the
//     walk of what remains. deferred-s/op, the same with
//     expire_deletion_delay: 1h: no post-commit deletion, the job returns
//     the unreachable files for a later pass instead. After each real run
//     (untimed) the table is put back as it was: the catalog entry is reset
//     to the old metadata file and the deleted files are re-linked from
//     hard links taken before.
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
	// The three jobs are measured in turn within every iteration (in an
	// order that rotates between iterations), so that their ratios compare
	// runs seconds apart: this machine's load drifts more than that between
	// sub-benchmarks run minutes apart.
	b.Run("jobs", func(b *testing.B) {
		dry := executor.New(refusingCatalog{mt.cat}, slog.New(slog.DiscardHandler), metrics.New())
		jobs := make([]planner.Job, 3)
		for k, yaml := range []string{expiryYAML, expiryYAML, expiryDeferredYAML} {
			jobs[k] = maintJob(b, mt.load(b, ident), ident, planner.KindExpireSnapshots, yaml)
			jobs[k].ExpireOlderThan = time.Millisecond
		}
		// run runs one of the three, with untimed setup and restore around
		// it, and returns how long the job took.
		run := func(k int) time.Duration {
			b.StopTimer()
			defer b.StartTimer()
			if k == 0 {
				runtime.GC()
				b.StartTimer()
				start := time.Now()
				res, _ := dry.Run(mt.ctx, jobs[k])
				took := time.Since(start)
				b.StopTimer()
				if res.Outcome != planner.Failed || !errors.Is(res.Err, errCommitRefused) {
					b.Fatalf("expiry without commit: %v %v, want the refused commit", res.Outcome, res.Err)
				}
				return took
			}
			restoreFiles := mt.saveMetadataFiles(b)
			restoreEntry := mt.pinCatalogEntry(b)
			runtime.GC()
			b.StartTimer()
			start := time.Now()
			res, rep := mt.exec.Run(mt.ctx, jobs[k])
			took := time.Since(start)
			b.StopTimer()
			if res.Outcome != planner.Succeeded {
				b.Fatalf("expiry: %v %v", res.Outcome, res.Err)
			}
			x := rep.Expiry
			// Every append's small manifest was merged away: only the
			// current snapshot's merged manifests remain, and no data file
			// goes.
			if x.ExpiredSnapshots != mt.snapshots-1 || x.DeletedManifestLists != mt.snapshots-1 ||
				x.DeletedManifests != mt.appends || x.DeletedDataFiles != 0 {
				b.Fatalf("report %+v: want %d snapshots and manifest lists, %d manifests, no data file",
					x, mt.snapshots-1, mt.appends)
			}
			unreachable := x.DeletedManifests + x.DeletedManifestLists
			if deferred := k == 2; deferred != x.Deferred || deferred != (len(res.PendingDeletes) == 1) {
				b.Fatalf("deletion of %d unreachable files deferred: %v, batches %v (deferral configured: %v)",
					unreachable, x.Deferred, res.PendingDeletes, deferred)
			}
			for _, ref := range res.PendingDeletes {
				if err := deletions.Remove(iceio.LocalFS{}, ref); err != nil {
					b.Fatal(err)
				}
			}
			restoreEntry()
			restoreFiles()
			return took
		}
		var took [3]time.Duration
		var jobPerDry, deferredPerJob []float64
		i := 0
		for b.Loop() {
			var this [3]time.Duration
			for k := range 3 {
				which := (i + k) % 3
				this[which] = run(which)
				took[which] += this[which]
			}
			jobPerDry = append(jobPerDry, this[1].Seconds()/this[0].Seconds())
			deferredPerJob = append(deferredPerJob, this[2].Seconds()/this[1].Seconds())
			i++
		}
		n := float64(b.N)
		b.ReportMetric(took[0].Seconds()/n, "no-commit-s/op")
		b.ReportMetric(took[1].Seconds()/n, "job-s/op")
		b.ReportMetric(took[2].Seconds()/n, "deferred-s/op")
		b.ReportMetric(median(jobPerDry), "job/no-commit")
		b.ReportMetric(median(deferredPerJob), "deferred/job")
		b.ReportMetric(float64(mt.appends+mt.snapshots-1), "files-unreachable")
		mt.report(b)
	})
	// The table is back as built: every snapshot, and every file the
	// history references (a walk of it fails on a missing file).
	tbl := mt.load(b, ident)
	if got := len(tbl.Metadata().Snapshots()); got != mt.snapshots {
		b.Fatalf("table has %d snapshots after the benchmark, want %d", got, mt.snapshots)
	}
	exec := executor.New(refusingCatalog{mt.cat}, slog.New(slog.DiscardHandler), metrics.New())
	job := maintJob(b, tbl, ident, planner.KindExpireSnapshots, expiryYAML)
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
//     against the whole history (reactor's own walk); no listing.
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
	var cands []planner.OrphanCandidate
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
		cands = append(cands, planner.OrphanCandidate{Location: loc, Size: 1, Created: old})
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
		tracked := maintJob(b, mt.load(b, ident), ident, planner.KindRemoveOrphans, orphanDryYAML)
		tracked.OrphanSource, tracked.OrphanCandidates = planner.OrphansFromTracking, cands
		listed := maintJob(b, mt.load(b, ident), ident, planner.KindRemoveOrphans, orphanDryYAML)
		listed.OrphanSource = planner.OrphansFromListing
		empty := "file://" + b.TempDir()
		runs := []func(){
			func() {
				res, rep := mt.exec.Run(mt.ctx, tracked)
				if res.Outcome != planner.Succeeded {
					b.Fatalf("tracked orphans: %v %v", res.Outcome, res.Err)
				}
				orphans(b, rep)
			},
			func() {
				res, rep := mt.exec.Run(mt.ctx, listed)
				if res.Outcome != planner.Succeeded {
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
		var took [3]time.Duration
		var ratios []float64
		i := 0
		for b.Loop() {
			var this [3]time.Duration
			for k := range runs {
				which := (i + k) % len(runs)
				runtime.GC()
				start := time.Now()
				runs[which]()
				this[which] = time.Since(start)
				took[which] += this[which]
			}
			ratios = append(ratios, this[1].Seconds()/this[0].Seconds())
			i++
		}
		n := float64(b.N)
		b.ReportMetric(took[0].Seconds()/n, "tracking-s/op")
		b.ReportMetric(took[1].Seconds()/n, "listing-s/op")
		b.ReportMetric(took[2].Seconds()/n, "refs-only-s/op")
		b.ReportMetric(median(ratios), "listing/tracking")
		report(b)
	})
}
