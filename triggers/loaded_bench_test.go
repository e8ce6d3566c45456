package triggers_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// BenchmarkReactionLatencyLoaded measures the reaction latency of a hot
// table (publish of the commit event that crosses the threshold -> job
// dispatched, as BenchmarkReactionLatency's "nats") while the rest of the
// lakehouse is busy:
//
//   - "unloaded": nothing else (the peer);
//   - "jobs-queued": 200 other tables, 100 of them with a job dispatched
//     and never finished (the planner holds one job per table, so they
//     stay queued for the whole run);
//   - "loaded": the same, and before every measured event 10,000 events of
//     those 200 tables published (their states are at the newest
//     snapshot, as after a restart with a backlog): the hot event is
//     behind all of them in the stream.
func BenchmarkReactionLatencyLoaded(b *testing.B) {
	const otherTables, otherWithJobs, queuedEvents = 200, 100, 10_000
	for _, mode := range []string{"unloaded", "jobs-queued", "loaded"} {
		b.Run(mode, func(b *testing.B) {
			r := newReactionRig(b, true)
			var backlog [][]byte
			var subjects []string
			if mode != "unloaded" {
				payloads := r.addOtherTables(b, otherTables, otherWithJobs)
				if n, err := r.planner.Discover(r.ctx); err != nil || n != otherTables+1 {
					b.Fatalf("discovered %d tables: %v", n, err)
				}
				deadline := time.Now().Add(time.Minute)
				for r.otherJobs.Load() < otherWithJobs {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d other jobs dispatched", r.otherJobs.Load(), otherWithJobs)
					}
					time.Sleep(time.Millisecond)
				}
				if mode == "loaded" {
					for k := range queuedEvents {
						i := k % otherTables
						backlog = append(backlog, payloads[i])
						subjects = append(subjects, fmt.Sprintf("iceberg.commits.other.t%03d", i))
					}
				}
			}
			runtime.GC()
			var (
				lat []time.Duration
				i   int
			)
			for b.Loop() {
				b.StopTimer()
				part := fmt.Sprintf("p%06d", i)
				i++
				payload := r.primeBelowThreshold(b, part, history)
				select {
				case d := <-r.jobs:
					b.Fatalf("job %v scheduled before its event", d.job.PartitionKeys())
				default:
				}
				if len(backlog) > 0 {
					publishAll(b, r.ctx, r.js, subjects, backlog)
				}
				b.StartTimer()

				start := time.Now()
				r.deliver(b, payload)
				d := r.awaitJob(b)

				b.StopTimer()
				lat = append(lat, d.at.Sub(start))
				r.planner.Finished(r.ctx, d.job, jobs.Result{Outcome: jobs.Noop})
				b.StartTimer()
			}
			slices.Sort(lat)
			b.ReportMetric(ms(quantile(lat, 0.50)), "p50-ms")
			b.ReportMetric(ms(quantile(lat, 0.99)), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			b.ReportMetric(float64(r.otherJobs.Load()), "other-jobs")
		})
	}
}

// addOtherTables creates n tables other.tNNN in the rig's catalog, the
// first withJobs with small_file_count small files in one partition (a
// job due), the others with one large file; it returns each table's
// commit event for its current snapshot.
func (r *reactionRig) addOtherTables(b *testing.B, n, withJobs int) [][]byte {
	b.Helper()
	payloads := make([][]byte, n)
	for i := range n {
		ident := table.Identifier{"other", fmt.Sprintf("t%03d", i)}
		tbl, err := streamwriter.CreateTable(r.ctx, r.cat, ident, nil)
		if err != nil {
			b.Fatal(err)
		}
		count, size := 1, int64(1<<30)
		if i < withJobs {
			count, size = smallFiles, 1<<20
		}
		txn := tbl.NewTransaction()
		if err := txn.AddDataFiles(r.ctx, r.files(b, tbl, "x", count, size), nil, table.WithoutDuplicateCheck()); err != nil {
			b.Fatal(err)
		}
		committed, err := txn.Commit(r.ctx)
		if err != nil {
			b.Fatal(err)
		}
		ev := events.CommitEvent{Namespace: "other", Table: ident[1], SnapshotID: committed.CurrentSnapshot().SnapshotID,
			Operation: "append", Partitions: []string{"category=x"}}
		if payloads[i], err = ev.Encode(); err != nil {
			b.Fatal(err)
		}
	}
	return payloads
}
