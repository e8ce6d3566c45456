package planner_test

// Benchmarks of the planner's event path and per-commit state update, on a
// real table in the embedded SQLite catalog. Commits are made with
// fabricated data-file entries (Transaction.AddDataFiles): the planner reads
// only manifests, so the data files need not exist. Every commit is made
// with the timer stopped; only what reactor does per event is measured.
//
// Table metadata holds every retained snapshot and the catalog's LoadTable
// parses all of it on every event, so the snapshot count is held fixed:
// before each measured event the table is trimmed (ExpireSnapshots, untimed,
// files kept) so that the event's snapshot is the history-th. The manifest
// list still grows by one manifest per commit (fast append).
//
// They run only with -bench; see BENCHMARKS.md for the commands and the
// numbers measured on the reference machine.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// history is the number of snapshots the table holds at every measured
// event (unless a benchmark varies it).
const history = 50

// noJobs keeps every partition under the small-file threshold, so the
// planner evaluates partitions but never schedules (the event path alone).
const noJobs = `
defaults:
  small_file_count: 1000000000
  manifest_count: 1000000000
  tier_fan_in: 1000000
`

// benchTable is the streamwriter's identity(category)-partitioned format-v2
// table in a fresh embedded SQLite catalog.
type benchTable struct {
	ctx   context.Context
	cat   catalog.Catalog
	ident table.Identifier
	seq   int
}

func newBenchTable(b *testing.B) *benchTable {
	b.Helper()
	ctx := context.Background()
	cat, err := embedded.OpenCatalog(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if c, ok := cat.(io.Closer); ok {
			_ = c.Close()
		}
	})
	bt := &benchTable{ctx: ctx, cat: cat, ident: table.Identifier{"db", "events"}}
	if _, err := streamwriter.CreateTable(ctx, cat, bt.ident, nil); err != nil {
		b.Fatal(err)
	}
	return bt
}

func (bt *benchTable) load(b *testing.B) *table.Table {
	b.Helper()
	tbl, err := bt.cat.LoadTable(bt.ctx, bt.ident)
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}

// dataFiles fabricates n data-file entries of size bytes each, spread
// round-robin over partitions, with unique paths.
func (bt *benchTable) dataFiles(b *testing.B, tbl *table.Table, partitions []string, n int, size int64) []iceberg.DataFile {
	b.Helper()
	spec := tbl.Spec()
	files := make([]iceberg.DataFile, n)
	for i := range files {
		bt.seq++
		part := partitions[i%len(partitions)]
		bld, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData,
			fmt.Sprintf("%s/data/category=%s/bench-%09d.parquet", tbl.Location(), part, bt.seq),
			iceberg.ParquetFile, map[int]any{1000: part}, nil, nil, 100, size)
		if err != nil {
			b.Fatal(err)
		}
		files[i] = bld.Build()
	}
	return files
}

// addFiles commits n fabricated data files as one append snapshot (one new
// manifest: fast append; manifest merging is off by default) and returns
// the commit event's JSON for that snapshot.
func (bt *benchTable) addFiles(b *testing.B, partitions []string, n int, size int64) []byte {
	b.Helper()
	tbl := bt.load(b)
	txn := tbl.NewTransaction()
	// The duplicate check would scan every live file of the table per
	// commit; the paths here are unique by construction.
	if err := txn.AddDataFiles(bt.ctx, bt.dataFiles(b, tbl, partitions, n, size), nil,
		table.WithoutDuplicateCheck()); err != nil {
		b.Fatal(err)
	}
	committed, err := txn.Commit(bt.ctx)
	if err != nil {
		b.Fatal(err)
	}
	return commitEvent(b, committed, partitions)
}

// addHistory commits n single-file appends as n snapshots in one catalog
// commit (one transaction), which is much faster than n commits.
func (bt *benchTable) addHistory(b *testing.B, partitions []string, n int) {
	b.Helper()
	if n <= 0 {
		return
	}
	tbl := bt.load(b)
	before := len(tbl.Metadata().Snapshots())
	txn := tbl.NewTransaction()
	for i := range n {
		files := bt.dataFiles(b, tbl, partitions[i%len(partitions):i%len(partitions)+1], 1, 1<<20)
		if err := txn.AddDataFiles(bt.ctx, files, nil, table.WithoutDuplicateCheck()); err != nil {
			b.Fatal(err)
		}
	}
	committed, err := txn.Commit(bt.ctx)
	if err != nil {
		b.Fatal(err)
	}
	if got := len(committed.Metadata().Snapshots()); got != before+n {
		b.Fatalf("history has %d snapshots, want %d", got, before+n)
	}
}

// trim expires all but the newest keep snapshots (metadata only: no file is
// deleted), so the next commit makes keep+1.
func (bt *benchTable) trim(b *testing.B, keep int) {
	b.Helper()
	tbl := bt.load(b)
	if len(tbl.Metadata().Snapshots()) <= keep {
		return
	}
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(keep),
		table.WithPostCommit(false)); err != nil {
		b.Fatal(err)
	}
	committed, err := txn.Commit(bt.ctx)
	if err != nil {
		b.Fatal(err)
	}
	if got := len(committed.Metadata().Snapshots()); got != keep {
		b.Fatalf("trimmed to %d snapshots, want %d", got, keep)
	}
}

// commitEvent renders the wire form a streaming writer publishes for the
// table's current snapshot: identifiers, operation, summary, partitions.
func commitEvent(b *testing.B, tbl *table.Table, partitions []string) []byte {
	b.Helper()
	snap := tbl.CurrentSnapshot()
	ev := events.CommitEvent{
		Namespace:  "db",
		Table:      "events",
		SnapshotID: snap.SnapshotID,
	}
	if snap.Summary != nil {
		ev.Operation = string(snap.Summary.Operation)
		ev.Summary = snap.Summary.Properties
	}
	if len(partitions) <= 8 {
		for _, p := range partitions {
			ev.Partitions = append(ev.Partitions, "category="+p)
		}
	}
	data, err := ev.Encode()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func partitionNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("p%03d", i)
	}
	return out
}

// updateLog counts what the planner reports about each state update through
// its log lines ("table state advanced" at debug level, "table state built
// from current snapshot" at info level). It is the only way to observe the
// manifests read without changing non-test code.
type updateLog struct {
	manifests atomic.Int64
	snapshots atomic.Int64
	advances  atomic.Int64
	rebuilds  atomic.Int64
}

func (u *updateLog) Enabled(context.Context, slog.Level) bool { return true }

func (u *updateLog) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "table state advanced":
		u.advances.Add(1)
	case "table state built from current snapshot":
		u.rebuilds.Add(1)
	default:
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "manifests_read":
			u.manifests.Add(a.Value.Int64())
		case "snapshots":
			u.snapshots.Add(a.Value.Int64())
		}
		return true
	})
	return nil
}

func (u *updateLog) WithAttrs([]slog.Attr) slog.Handler { return u }
func (u *updateLog) WithGroup(string) slog.Handler      { return u }

func (u *updateLog) reset() {
	u.manifests.Store(0)
	u.snapshots.Store(0)
	u.advances.Store(0)
	u.rebuilds.Store(0)
}

// expectIncremental fails the benchmark unless every measured event was
// applied incrementally (no rebuild).
func (u *updateLog) expectIncremental(b *testing.B) {
	b.Helper()
	if u.rebuilds.Load() != 0 || u.advances.Load() != int64(b.N) {
		b.Fatalf("expected %d incremental updates and no rebuild, got %d and %d rebuilds",
			b.N, u.advances.Load(), u.rebuilds.Load())
	}
}

func newBenchPlanner(b *testing.B, cat catalog.Catalog, log slog.Handler) *planner.Planner {
	b.Helper()
	cfg, err := thresholds.Parse([]byte(noJobs))
	if err != nil {
		b.Fatal(err)
	}
	p := planner.New(planner.Options{
		Catalog:  cat,
		Config:   cfg,
		Dispatch: func(j jobs.Job) { b.Errorf("no job expected, got %s %v", j.Kind, j.Reasons) },
		Logger:   slog.New(log),
	})
	b.Cleanup(p.Close)
	return p
}

// apply is the event path: decode the JSON, route it to its table, update
// the counters and evaluate the partitions.
func apply(b *testing.B, p *planner.Planner, payload []byte) {
	ev, err := events.DecodeCommit(payload)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Apply(context.Background(), ev); err != nil {
		b.Fatal(err)
	}
}

// measure runs the benchmark loop: prepare (untimed) returns the input of
// one iteration, run (timed) consumes it. It returns the process CPU time
// spent in the timed parts.
func measure[T any](b *testing.B, prepare func(i int) T, run func(T)) time.Duration {
	runtime.GC() // collect the setup's garbage before measuring
	var cpu time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		in := prepare(i)
		i++
		c0 := processCPU()
		b.StartTimer()

		run(in)

		b.StopTimer()
		cpu += processCPU() - c0
		b.StartTimer()
	}
	return cpu
}

// reportRates adds events/s (wall time of the measured part) and
// events/s/core (CPU time of the whole process during the measured part).
func reportRates(b *testing.B, unit string, cpu time.Duration) {
	if el := b.Elapsed(); el > 0 {
		b.ReportMetric(float64(b.N)/el.Seconds(), unit+"/s")
	}
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), unit+"/s/core")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkEventPath measures what reactor does per commit event on a small
// table (8 partitions; 80 files to start with, one more per event; 50
// snapshots): decode the JSON, route it to the table (LoadTable from the
// catalog), bring the counters up to the new snapshot by reading its
// manifest list and the one manifest it added, and re-evaluate the
// partitions. No job is ever scheduled.
//
// "decode" is events.DecodeCommit alone, and "load-table" the catalog's
// LoadTable alone (same commits, untimed), to show where the time goes.
func BenchmarkEventPath(b *testing.B) {
	parts := partitionNames(8)
	setup := func(b *testing.B) *benchTable {
		bt := newBenchTable(b)
		bt.addFiles(b, parts, 80, 1<<20)
		bt.addHistory(b, parts, history-1)
		return bt
	}
	next := func(b *testing.B, bt *benchTable, i int) []byte {
		bt.trim(b, history-1)
		p := parts[i%len(parts) : i%len(parts)+1]
		return bt.addFiles(b, p, 1, 1<<20)
	}

	b.Run("decode", func(b *testing.B) {
		bt := newBenchTable(b)
		payload := bt.addFiles(b, parts[:1], 1, 1<<20)
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if _, err := events.DecodeCommit(payload); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})

	b.Run("load-table", func(b *testing.B) {
		bt := setup(b)
		cpu := measure(b, func(i int) []byte { return next(b, bt, i) }, func([]byte) {
			if _, err := bt.cat.LoadTable(bt.ctx, bt.ident); err != nil {
				b.Fatal(err)
			}
		})
		reportRates(b, "events", cpu)
	})

	b.Run("decode+apply", func(b *testing.B) {
		bt := setup(b)
		ul := &updateLog{}
		p := newBenchPlanner(b, bt.cat, ul)
		apply(b, p, bt.addFiles(b, parts[:1], 1, 1<<20)) // the first event builds the state
		ul.reset()
		cpu := measure(b, func(i int) []byte { return next(b, bt, i) }, func(payload []byte) { apply(b, p, payload) })
		ul.expectIncremental(b)
		reportRates(b, "events", cpu)
		b.ReportMetric(float64(ul.manifests.Load())/float64(b.N), "manifests/op")
	})
}

// BenchmarkWriterCommit is the peer of BenchmarkEventPath: the cost of the
// commit that produces one event, on the same table shape. The event path
// keeps up with a writer as long as it is cheaper than this.
//
// "parquet-append" is streamwriter.Writer.Commit of 100 rows: write one
// Parquet file, then Table.Append (what the demo's writer does).
// "add-data-files" commits one fabricated entry (manifest, manifest list,
// metadata JSON and the catalog row only): the floor of any commit.
func BenchmarkWriterCommit(b *testing.B) {
	parts := partitionNames(8)
	setup := func(b *testing.B) *benchTable {
		bt := newBenchTable(b)
		bt.addFiles(b, parts, 80, 1<<20)
		bt.addHistory(b, parts, history-1)
		return bt
	}

	b.Run("parquet-append", func(b *testing.B) {
		bt := setup(b)
		w := streamwriter.New(bt.cat, bt.ident, nil)
		cpu := measure(b, func(i int) string {
			bt.trim(b, history-1)
			return parts[i%len(parts)]
		}, func(part string) {
			if _, err := w.Commit(bt.ctx, part, 100); err != nil {
				b.Fatal(err)
			}
		})
		reportRates(b, "commits", cpu)
	})

	b.Run("add-data-files", func(b *testing.B) {
		bt := setup(b)
		cpu := measure(b, func(i int) []string {
			bt.trim(b, history-1)
			return parts[i%len(parts) : i%len(parts)+1]
		}, func(part []string) {
			bt.addFiles(b, part, 1, 1<<20)
		})
		reportRates(b, "commits", cpu)
	})
}

// stateUpdateTable builds the BenchmarkStateUpdate table: 100 partitions,
// files data files in 10 fast-append commits of files/10 entries each, then
// single-file commits up to history snapshots; and a planner whose state was
// built from it (untimed, returned as rebuild).
func stateUpdateTable(b *testing.B, parts []string, files int) (*benchTable, *planner.Planner, *updateLog, time.Duration) {
	bt := newBenchTable(b)
	for range 10 {
		bt.addFiles(b, parts, files/10, 1<<20)
	}
	bt.addHistory(b, parts, history-11)
	payload := bt.addFiles(b, parts[:1], 1, 1<<20)
	ul := &updateLog{}
	p := newBenchPlanner(b, bt.cat, ul)
	start := time.Now()
	apply(b, p, payload)
	rebuild := time.Since(start)
	if ul.rebuilds.Load() != 1 {
		b.Fatalf("first event: expected one rebuild, got %d", ul.rebuilds.Load())
	}
	if want := files + history - 10; liveFiles(p) != want {
		b.Fatalf("state holds %d files, want %d", liveFiles(p), want)
	}
	ul.reset()
	return bt, p, ul, rebuild
}

// BenchmarkStateUpdate measures one commit's state update on a table of
// 1,000 and of 100,000 data files (see stateUpdateTable: both sizes have
// the same snapshots and manifests and differ only in entries per
// manifest). The first event builds the state (untimed, reported as
// rebuild-ms); then each iteration commits one more file (untimed) and
// times decode + Apply of its event. Only the new snapshot's manifest list
// and its one new manifest are read, so the two sizes should cost the same.
func BenchmarkStateUpdate(b *testing.B) {
	parts := partitionNames(100)
	for _, files := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			bt, p, ul, rebuild := stateUpdateTable(b, parts, files)
			before := liveFiles(p)
			cpu := measure(b, func(i int) []byte {
				bt.trim(b, history-1)
				return bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20)
			}, func(payload []byte) { apply(b, p, payload) })
			ul.expectIncremental(b)
			if liveFiles(p) != before+b.N {
				b.Fatalf("state holds %d files, want %d", liveFiles(p), before+b.N)
			}
			b.ReportMetric(float64(rebuild.Microseconds())/1000, "rebuild-ms")
			b.ReportMetric(float64(ul.manifests.Load())/float64(b.N), "manifests/op")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
	}
}

// BenchmarkStateUpdateAfterManifestRewrite is the edge of "only new
// manifests are read": a RewriteManifests snapshot (what a manifest
// maintenance job commits; docs/design.md#pitfall-manifests-dominate)
// writes new manifests that hold every live entry as EXISTING. Each
// iteration commits one file and applies its event (untimed), rewrites the
// manifests into fewer ones (untimed), then times decode + Apply of the
// rewrite's event.
func BenchmarkStateUpdateAfterManifestRewrite(b *testing.B) {
	parts := partitionNames(100)
	for _, files := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			bt, p, ul, _ := stateUpdateTable(b, parts, files)
			var manifests int
			cpu := measure(b, func(i int) []byte {
				bt.trim(b, history-2)
				apply(b, p, bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20))
				ul.reset()
				txn := bt.load(b).NewTransaction()
				if _, err := txn.RewriteManifests(bt.ctx); err != nil {
					b.Fatal(err)
				}
				committed, err := txn.Commit(bt.ctx)
				if err != nil {
					b.Fatal(err)
				}
				manifests = manifestCount(b, committed)
				return commitEvent(b, committed, nil)
			}, func(payload []byte) { apply(b, p, payload) })
			if ul.rebuilds.Load() != 0 {
				b.Fatalf("unexpected rebuild")
			}
			b.ReportMetric(float64(ul.manifests.Load()), "manifests/op") // the last iteration's
			b.ReportMetric(float64(manifests), "manifests-in-table")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
	}
}

// BenchmarkHistory shows what the number of retained snapshots does to one
// event's decode + Apply on the EventPath table: the catalog's LoadTable
// parses the whole table metadata (every snapshot and its summary) on every
// event.
func BenchmarkHistory(b *testing.B) {
	parts := partitionNames(8)
	for _, snaps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("snapshots=%d", snaps), func(b *testing.B) {
			bt := newBenchTable(b)
			bt.addFiles(b, parts, 80, 1<<20)
			bt.addHistory(b, parts, snaps-2)
			ul := &updateLog{}
			p := newBenchPlanner(b, bt.cat, ul)
			apply(b, p, bt.addFiles(b, parts[:1], 1, 1<<20))
			ul.reset()
			cpu := measure(b, func(i int) []byte {
				bt.trim(b, snaps-1)
				return bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20)
			}, func(payload []byte) { apply(b, p, payload) })
			ul.expectIncremental(b)
			reportRates(b, "events", cpu)
			b.ReportMetric(float64(ul.manifests.Load())/float64(b.N), "manifests/op")
		})
	}
}

func liveFiles(p *planner.Planner) int {
	_, counters := p.TableCounters("db.events")
	n := 0
	for _, c := range counters {
		n += c.DataFiles
	}
	return n
}

func manifestCount(b *testing.B, tbl *table.Table) int {
	b.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		b.Fatal(err)
	}
	return len(ms)
}
