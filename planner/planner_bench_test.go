package planner_test

// Benchmarks of the planner's event path and per-commit state update, on a
// real table in the embedded SQLite catalog. Commits are made with
// fabricated data-file entries (Transaction.AddDataFiles): the planner reads
// only manifests, so the data files need not exist. Every commit is made
// with the timer stopped; only what reactor does per event is measured.
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
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// noJobs keeps every partition under the small-file threshold, so the
// planner evaluates partitions but never schedules (the event path alone).
const noJobs = `
defaults:
  small_file_count: 1000000000
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

// addFiles commits n fabricated data files of size bytes each, spread
// round-robin over partitions, as one append snapshot (one new manifest:
// fast append, manifest merging is off by default). It returns the commit
// event's JSON for that snapshot.
func (bt *benchTable) addFiles(b *testing.B, partitions []string, n int, size int64) []byte {
	b.Helper()
	tbl, err := bt.cat.LoadTable(bt.ctx, bt.ident)
	if err != nil {
		b.Fatal(err)
	}
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
	txn := tbl.NewTransaction()
	// The duplicate check would scan every live file of the table per
	// commit; the paths here are unique by construction.
	if err := txn.AddDataFiles(bt.ctx, files, nil, table.WithoutDuplicateCheck()); err != nil {
		b.Fatal(err)
	}
	committed, err := txn.Commit(bt.ctx)
	if err != nil {
		b.Fatal(err)
	}
	return commitEvent(b, committed, partitions)
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
		Operation:  "append",
	}
	if snap.Summary != nil {
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
	jobs      atomic.Int64
}

func (u *updateLog) Enabled(context.Context, slog.Level) bool { return true }

func (u *updateLog) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "table state advanced":
		u.advances.Add(1)
	case "table state built from current snapshot":
		u.rebuilds.Add(1)
	case "job scheduled":
		u.jobs.Add(1)
		return nil
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
	u.jobs.Store(0)
}

func newBenchPlanner(b *testing.B, cat catalog.Catalog, cfgYAML string, log slog.Handler) *planner.Planner {
	b.Helper()
	cfg, err := thresholds.Parse([]byte(cfgYAML))
	if err != nil {
		b.Fatal(err)
	}
	if log == nil {
		log = slog.DiscardHandler
	}
	p := planner.New(planner.Options{
		Catalog:  cat,
		Config:   cfg,
		Dispatch: func(planner.Job) {},
		Logger:   slog.New(log),
	})
	b.Cleanup(p.Close)
	return p
}

func apply(b *testing.B, p *planner.Planner, payload []byte) {
	ev, err := events.DecodeCommit(payload)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Apply(context.Background(), ev); err != nil {
		b.Fatal(err)
	}
}

// reportRates adds events/s (wall time of the measured part) and
// events/s/core (CPU time of the whole process during the measured part).
func reportRates(b *testing.B, cpu time.Duration) {
	if el := b.Elapsed(); el > 0 {
		b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	}
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/s/core")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkEventPath measures what reactor does per commit event on a small
// table (8 partitions, 80 files to start with): decode the JSON, route it to
// the table (LoadTable from the catalog), bring the counters up to the new
// snapshot by reading its manifest list and the one manifest it added, and
// re-evaluate the partitions. No job is ever scheduled.
//
// "decode" is events.DecodeCommit alone, and "load-table" the catalog's
// LoadTable alone (same commits, untimed), to show where the time goes.
func BenchmarkEventPath(b *testing.B) {
	parts := partitionNames(8)

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
		bt := newBenchTable(b)
		bt.addFiles(b, parts, 80, 1<<20)
		runtime.GC() // collect the setup's garbage before measuring
		var cpu time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20)
			i++
			c0 := processCPU()
			b.StartTimer()

			if _, err := bt.cat.LoadTable(bt.ctx, bt.ident); err != nil {
				b.Fatal(err)
			}

			b.StopTimer()
			cpu += processCPU() - c0
			b.StartTimer()
		}
		reportRates(b, cpu)
	})

	b.Run("decode+apply", func(b *testing.B) {
		bt := newBenchTable(b)
		ul := &updateLog{}
		p := newBenchPlanner(b, bt.cat, noJobs, ul)
		apply(b, p, bt.addFiles(b, parts, 80, 1<<20)) // first event builds the state
		ul.reset()
		runtime.GC() // collect the setup's garbage before measuring
		var cpu time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			payload := bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20)
			i++
			c0 := processCPU()
			b.StartTimer()

			apply(b, p, payload)

			b.StopTimer()
			cpu += processCPU() - c0
			b.StartTimer()
		}
		if ul.rebuilds.Load() != 0 || ul.advances.Load() != int64(b.N) {
			b.Fatalf("expected %d incremental updates and no rebuild, got %d and %d",
				b.N, ul.advances.Load(), ul.rebuilds.Load())
		}
		reportRates(b, cpu)
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

	b.Run("parquet-append", func(b *testing.B) {
		bt := newBenchTable(b)
		bt.addFiles(b, parts, 80, 1<<20)
		w := streamwriter.New(bt.cat, bt.ident, nil)
		c0 := processCPU()
		i := 0
		for b.Loop() {
			if _, err := w.Commit(bt.ctx, parts[i%len(parts)], 100); err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportCommitRates(b, processCPU()-c0)
	})

	b.Run("add-data-files", func(b *testing.B) {
		bt := newBenchTable(b)
		bt.addFiles(b, parts, 80, 1<<20)
		c0 := processCPU()
		i := 0
		for b.Loop() {
			bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20)
			i++
		}
		reportCommitRates(b, processCPU()-c0)
	})
}

func reportCommitRates(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "commits/s/core")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkStateUpdate measures one commit's state update on a table of
// 1,000 and of 100,000 data files (100 partitions; the table is built by 10
// fast-append commits of files/10 entries each, so both sizes have the same
// number of snapshots and manifests and differ only in entries per
// manifest). The first event builds the state (untimed, reported as
// rebuild-ms); then each iteration commits one more file (untimed) and
// times decode + Apply of its event. Only the new snapshot's manifest list
// and its one new manifest are read, so the two sizes should cost the same.
func BenchmarkStateUpdate(b *testing.B) {
	parts := partitionNames(100)
	for _, files := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			bt := newBenchTable(b)
			var payload []byte
			for range 10 {
				payload = bt.addFiles(b, parts, files/10, 1<<20)
			}
			ul := &updateLog{}
			p := newBenchPlanner(b, bt.cat, noJobs, ul)
			start := time.Now()
			apply(b, p, payload)
			rebuild := time.Since(start)
			if ul.rebuilds.Load() != 1 {
				b.Fatalf("first event: expected one rebuild, got %d", ul.rebuilds.Load())
			}
			if _, counters := p.TableCounters("db.events"); sumFiles(counters) != files {
				b.Fatalf("state holds %d files, want %d", sumFiles(counters), files)
			}
			ul.reset()

			runtime.GC() // collect the setup's garbage before measuring
			var cpu time.Duration
			i := 0
			for b.Loop() {
				b.StopTimer()
				payload := bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20)
				i++
				c0 := processCPU()
				b.StartTimer()

				apply(b, p, payload)

				b.StopTimer()
				cpu += processCPU() - c0
				b.StartTimer()
			}
			if ul.rebuilds.Load() != 0 || ul.advances.Load() != int64(b.N) {
				b.Fatalf("expected %d incremental updates and no rebuild, got %d and %d",
					b.N, ul.advances.Load(), ul.rebuilds.Load())
			}
			if _, counters := p.TableCounters("db.events"); sumFiles(counters) != files+b.N {
				b.Fatalf("state holds %d files, want %d", sumFiles(counters), files+b.N)
			}
			b.ReportMetric(float64(rebuild.Microseconds())/1000, "rebuild-ms")
			b.ReportMetric(float64(ul.manifests.Load())/float64(b.N), "manifests/op")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
	}
}

func sumFiles(cs []planner.PartitionCounters) int {
	n := 0
	for _, c := range cs {
		n += c.DataFiles
	}
	return n
}

// BenchmarkHistory shows what the number of retained snapshots does to one
// event's decode + Apply: the catalog's LoadTable parses the whole table
// metadata (every snapshot and its summary) on every event. The history is
// made by one transaction of snapshots-1 single-file appends; the table then
// has snapshots snapshots and as many manifests in its manifest list.
func BenchmarkHistory(b *testing.B) {
	parts := partitionNames(8)
	for _, snaps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("snapshots=%d", snaps), func(b *testing.B) {
			bt := newBenchTable(b)
			bt.addHistory(b, parts, snaps-1)
			ul := &updateLog{}
			p := newBenchPlanner(b, bt.cat, noJobs, ul)
			apply(b, p, bt.addFiles(b, parts[:1], 1, 1<<20))
			ul.reset()
			runtime.GC() // collect the setup's garbage before measuring
			var cpu time.Duration
			i := 0
			for b.Loop() {
				b.StopTimer()
				payload := bt.addFiles(b, parts[i%len(parts):i%len(parts)+1], 1, 1<<20)
				i++
				c0 := processCPU()
				b.StartTimer()

				apply(b, p, payload)

				b.StopTimer()
				cpu += processCPU() - c0
				b.StartTimer()
			}
			if ul.rebuilds.Load() != 0 {
				b.Fatalf("unexpected rebuilds: %d", ul.rebuilds.Load())
			}
			reportRates(b, cpu)
			b.ReportMetric(float64(ul.manifests.Load())/float64(b.N), "manifests/op")
		})
	}
}

// addHistory commits n single-file appends as n snapshots in one catalog
// commit (one transaction), which is much faster than n commits.
func (bt *benchTable) addHistory(b *testing.B, partitions []string, n int) {
	b.Helper()
	tbl, err := bt.cat.LoadTable(bt.ctx, bt.ident)
	if err != nil {
		b.Fatal(err)
	}
	txn := tbl.NewTransaction()
	for i := range n {
		bt.seq++
		part := partitions[i%len(partitions)]
		bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData,
			fmt.Sprintf("%s/data/category=%s/bench-%09d.parquet", tbl.Location(), part, bt.seq),
			iceberg.ParquetFile, map[int]any{1000: part}, nil, nil, 100, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		if err := txn.AddDataFiles(bt.ctx, []iceberg.DataFile{bld.Build()}, nil, table.WithoutDuplicateCheck()); err != nil {
			b.Fatal(err)
		}
	}
	committed, err := txn.Commit(bt.ctx)
	if err != nil {
		b.Fatal(err)
	}
	if got := len(committed.Metadata().Snapshots()); got != n {
		b.Fatalf("history has %d snapshots, want %d", got, n)
	}
}
