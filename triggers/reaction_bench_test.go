package triggers_test

// BenchmarkReactionLatency measures how long reactor takes to schedule a
// compaction once a commit pushes a partition over its small-file threshold:
// from the writer publishing the commit event to the planner dispatching
// the job. It runs only with -bench; see BENCHMARKS.md.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// reactNow schedules a partition the moment its fifth small file lands: no
// quiet period, no cool-down; and no table-wide job (the streaming
// defaults would rewrite the 50 snapshots' manifests).
const reactNow = `
defaults:
  small_file_count: 5
  min_input_files: 5
  quiet_period: 0s
  cooldown: 0s
  manifest_count: 1000000
  snapshot_count: 1000000
`

const smallFiles = 5 // small_file_count above

// history is the number of snapshots the table holds at every measured
// event: LoadTable parses all of them per event, so it is held fixed by
// expiring older ones (untimed) as in the planner's benchmarks.
const history = 50

type dispatched struct {
	job jobs.Job
	at  time.Time
}

type reactionRig struct {
	ctx     context.Context
	cat     catalog.Catalog
	ident   table.Identifier
	planner *planner.Planner
	jobs    chan dispatched
	js      jetstream.JetStream // the writer's; nil without NATS
	seq     int
	// otherJobs counts the jobs dispatched for tables other than the
	// measured one (BenchmarkReactionLatencyLoaded); they never finish.
	otherJobs atomic.Int64
}

// newReactionRig builds the real path: a table in the embedded SQLite
// catalog and a planner whose Dispatch records the time; with viaNATS, an
// embedded NATS server with JetStream and the commit consumer feeding the
// planner, exactly as worker.Start wires them (minus the executor).
func newReactionRig(b *testing.B, viaNATS bool) *reactionRig {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	dir := b.TempDir()
	r := &reactionRig{ctx: ctx, ident: table.Identifier{"db", "events"}, jobs: make(chan dispatched, 16)}

	var err error
	r.cat, err = embedded.OpenCatalog(ctx, dir+"/catalog")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if c, ok := r.cat.(io.Closer); ok {
			_ = c.Close()
		}
	})
	if _, err := streamwriter.CreateTable(ctx, r.cat, r.ident, nil); err != nil {
		b.Fatal(err)
	}
	r.addHistory(b, history-2)

	cfg, err := thresholds.Parse([]byte(reactNow))
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	r.planner = planner.New(planner.Options{
		Catalog: r.cat,
		Config:  cfg,
		// Dispatch must not block: the channel is drained after every job.
		Dispatch: func(job jobs.Job) {
			if job.Table.String() != "db.events" {
				r.otherJobs.Add(1)
				return
			}
			r.jobs <- dispatched{job: job, at: time.Now()}
		},
		Logger: log,
	})
	b.Cleanup(r.planner.Close)

	if !viaNATS {
		return r
	}
	srv, _, consumer := embeddedtest.JetStream(b, dir+"/nats")
	// The writer publishes on a connection of its own, as a pipeline does
	// (sharing reactor's, its events would queue behind reactor's
	// acknowledgements on the way in).
	wc, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(wc.Close)
	if r.js, err = jetstream.New(wc, jetstream.WithPublishAsyncMaxPending(4096)); err != nil {
		b.Fatal(err)
	}
	cons, err := triggers.StartCommits(ctx, consumer, triggers.CommitOptions{}, r.planner, log, metrics.New())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cons.Stop) // runs first: stop consuming before the rest goes
	return r
}

func (r *reactionRig) load(b *testing.B) *table.Table {
	b.Helper()
	tbl, err := r.cat.LoadTable(r.ctx, r.ident)
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}

// files fabricates n data-file entries of size bytes in partition part
// (the planner reads manifests only; the files need not exist).
func (r *reactionRig) files(b *testing.B, tbl *table.Table, part string, n int, size int64) []iceberg.DataFile {
	b.Helper()
	files := make([]iceberg.DataFile, n)
	for i := range files {
		r.seq++
		bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData,
			fmt.Sprintf("%s/data/category=%s/bench-%09d.parquet", tbl.Location(), part, r.seq),
			iceberg.ParquetFile, map[int]any{1000: part}, nil, nil, 100, size)
		if err != nil {
			b.Fatal(err)
		}
		files[i] = bld.Build()
	}
	return files
}

// commit appends n small (1 MiB) files to partition part as one snapshot and returns its
// snapshot id and commit event.
func (r *reactionRig) commit(b *testing.B, part string, n int) (int64, []byte) {
	b.Helper()
	tbl := r.load(b)
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(r.ctx, r.files(b, tbl, part, n, 1<<20), nil, table.WithoutDuplicateCheck()); err != nil {
		b.Fatal(err)
	}
	committed, err := txn.Commit(r.ctx)
	if err != nil {
		b.Fatal(err)
	}
	snap := committed.CurrentSnapshot()
	ev := events.CommitEvent{Namespace: "db", Table: "events", SnapshotID: snap.SnapshotID,
		Operation: "append", Summary: snap.Summary.Properties, Partitions: []string{"category=" + part}}
	data, err := ev.Encode()
	if err != nil {
		b.Fatal(err)
	}
	return snap.SnapshotID, data
}

// addHistory commits n single-file snapshots in one catalog commit, to
// partition "history" and with 1 GiB files, which are not small: they
// never make a job.
func (r *reactionRig) addHistory(b *testing.B, n int) {
	b.Helper()
	tbl := r.load(b)
	txn := tbl.NewTransaction()
	for range n {
		if err := txn.AddDataFiles(r.ctx, r.files(b, tbl, "history", 1, 1<<30), nil, table.WithoutDuplicateCheck()); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := txn.Commit(r.ctx); err != nil {
		b.Fatal(err)
	}
}

// trim expires all but the newest keep snapshots (metadata only).
func (r *reactionRig) trim(b *testing.B, keep int) {
	b.Helper()
	tbl := r.load(b)
	if len(tbl.Metadata().Snapshots()) <= keep {
		return
	}
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(keep),
		table.WithPostCommit(false)); err != nil {
		b.Fatal(err)
	}
	if _, err := txn.Commit(r.ctx); err != nil {
		b.Fatal(err)
	}
}

// deliver hands one event to reactor: published to JetStream, or applied
// directly (decode + Apply, as the consumer's handler does).
func (r *reactionRig) deliver(b *testing.B, payload []byte) {
	if r.js != nil {
		if _, err := r.js.Publish(r.ctx, "iceberg.commits.db.events", payload); err != nil {
			b.Fatal(err)
		}
		return
	}
	ev, err := events.DecodeCommit(payload)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.planner.Apply(r.ctx, ev); err != nil {
		b.Fatal(err)
	}
}

// primeBelowThreshold brings partition part to one file below the
// small-file threshold (applied, no job) and returns the commit event of
// the file that crosses it, not yet delivered. The history is trimmed to
// keep the table at its size.
func (r *reactionRig) primeBelowThreshold(b *testing.B, part string, history int) []byte {
	b.Helper()
	r.trim(b, history-2)
	id, payload := r.commit(b, part, smallFiles-1)
	r.deliver(b, payload)
	r.waitApplied(b, id)
	select {
	case d := <-r.jobs:
		b.Fatalf("job %v scheduled below the threshold", d.job.PartitionKeys())
	default:
	}
	_, payload = r.commit(b, part, 1)
	return payload
}

// awaitJob is the next dispatched job (a minute at most).
func (r *reactionRig) awaitJob(b *testing.B) dispatched {
	b.Helper()
	select {
	case d := <-r.jobs:
		return d
	case <-time.After(time.Minute):
		b.Fatal("no job dispatched within a minute")
		return dispatched{}
	}
}

// waitApplied waits until the planner's state describes snapshot id.
func (r *reactionRig) waitApplied(b *testing.B, id int64) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got, _ := r.planner.TableCounters("db.events"); got == id {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("planner did not apply snapshot %d within 30s", id)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// BenchmarkReactionLatency: per iteration, a fresh partition gets
// small_file_count-1 small files (one commit, its event applied, untimed);
// then one more file is committed (untimed) and the time from delivering
// its event to the job's dispatch is measured. The table holds 50 snapshots
// at every measured event and one more partition per iteration.
//
// "nats" is the real path: js.Publish -> JetStream (file store) -> durable
// consumer -> triggers' handler -> DecodeCommit -> planner.Apply (LoadTable,
// incremental counter update, threshold evaluation) -> Dispatch.
// "direct" is the same minus NATS (DecodeCommit + Apply called in-process),
// the peer that isolates what the messaging adds.
func BenchmarkReactionLatency(b *testing.B) {
	for _, mode := range []string{"nats", "direct"} {
		b.Run(mode, func(b *testing.B) {
			r := newReactionRig(b, mode == "nats")
			runtime.GC()
			var (
				lat []time.Duration
				cpu time.Duration
				i   int
			)
			for b.Loop() {
				b.StopTimer()
				part := fmt.Sprintf("p%06d", i)
				i++
				payload := r.primeBelowThreshold(b, part, history)
				c0 := processCPU()
				b.StartTimer()

				start := time.Now()
				r.deliver(b, payload)
				d := r.awaitJob(b)

				b.StopTimer()
				cpu += processCPU() - c0
				lat = append(lat, d.at.Sub(start))
				if keys := d.job.PartitionKeys(); len(keys) != 1 || keys[0] != "category="+part {
					b.Fatalf("job for %v, want [category=%s]", keys, part)
				}
				// Nothing to compact here: report a no-op so the partition
				// settles and the table is free for the next job.
				r.planner.Finished(r.ctx, d.job, jobs.Result{Outcome: jobs.Noop})
				b.StartTimer()
			}
			slices.Sort(lat)
			b.ReportMetric(ms(quantile(lat, 0.50)), "p50-ms")
			b.ReportMetric(ms(quantile(lat, 0.99)), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
	}
}

// quantile is the nearest-rank quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
