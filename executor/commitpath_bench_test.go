package executor_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// BenchmarkRetryAttempt measures what one commit attempt after a lost race
// costs, against what the writer that won the race paid for its own commit
// (streamwriter: load, write a 100-row Parquet file, fast-append, commit),
// both measured in the same iteration on the same table, at 100 and at
// 2,000 snapshots of history. staged is reactor's commit path; replay is
// the path it replaced (iceberg-go's RewriteFiles staged again on every
// attempt).
//
//	go test -run '^$' -bench RetryAttempt -benchtime 5x ./executor/
//
// retry-ms/op is the attempt from the table load that starts it to the end
// of its catalog commit; writer-ms/op the writer's whole commit;
// retry/writer their ratio (target <= 2).
func BenchmarkRetryAttempt(b *testing.B) {
	for _, history := range []int{100, 2000} {
		f := newFixture(b, nil)
		growHistory(b, f, history)
		for _, path := range []string{"staged", "replay"} {
			b.Run(fmt.Sprintf("snapshots=%d/%s", history, path), func(b *testing.B) {
				exec := f.exec
				if path == "replay" {
					exec = newExecutor(b, executor.Options{Catalog: f.icat})
					executor.ReplayCommits(exec)
				}
				var retry, writer time.Duration
				n := 0
				for b.Loop() {
					part := fmt.Sprintf("%s-%d", path, n)
					for range 6 {
						f.commit(part, 100)
					}
					var w time.Duration
					f.icat.beforeNextCommits(func() {
						start := time.Now()
						f.commit("w", 100)
						w = time.Since(start)
					})
					res, rep := exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", part))
					if res.Outcome != jobs.Succeeded || rep.Attempts != 2 {
						b.Fatalf("outcome %v after %d attempts: %v", res.Outcome, rep.Attempts, res.Err)
					}
					retry += f.icat.lastAttempt()
					writer += w
					n++
				}
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
				b.ReportMetric(ms(retry), "retry-ms/op")
				b.ReportMetric(ms(writer), "writer-ms/op")
				b.ReportMetric(float64(retry)/float64(writer), "retry/writer")
				b.ReportMetric(float64(len(f.load().Metadata().Snapshots())), "snapshots")
			})
		}
	}
}

// pacedWriter appends to one partition at 3-5 commits/s (commits start
// 200-333 ms apart, drawn uniformly), telling exec about each commit when
// events is set, as the worker does from the commit events.
type pacedWriter struct {
	w     *streamwriter.Writer
	stop  context.CancelFunc
	done  sync.WaitGroup
	err   error
	start time.Time
	// busy is the time its commits took (each from its table load to
	// the end of its catalog commit), read after halt.
	busy time.Duration
}

func startPacedWriter(f *fixture, exec *executor.Executor, withEvents bool, category string) *pacedWriter {
	ctx, cancel := context.WithCancel(f.ctx)
	var publish streamwriter.Publisher
	if withEvents {
		publish = func(_ context.Context, ev events.CommitEvent) error {
			exec.CommitObserved(ev.QualifiedName())
			return nil
		}
	}
	pw := &pacedWriter{w: streamwriter.New(f.cat, ident, publish), stop: cancel, start: time.Now()}
	pw.done.Add(1)
	go func() {
		defer pw.done.Done()
		for ctx.Err() == nil {
			period := 200*time.Millisecond + time.Duration(rand.Int64N(int64(133*time.Millisecond)))
			start := time.Now()
			if _, err := pw.w.Commit(ctx, category, 100); err != nil {
				if ctx.Err() == nil {
					pw.err = err
				}
				return
			}
			pw.busy += time.Since(start)
			select {
			case <-ctx.Done():
			case <-time.After(period - time.Since(start)):
			}
		}
	}()
	return pw
}

// halt stops the writer and returns its commits, how long it ran and the
// rows it wrote.
func (pw *pacedWriter) halt(b *testing.B) (int, time.Duration, streamwriter.Tally) {
	pw.stop()
	pw.done.Wait()
	if pw.err != nil {
		b.Fatalf("writer: %v", pw.err)
	}
	commits, _ := pw.w.Stats()
	return commits, time.Since(pw.start), pw.w.Written()
}

// BenchmarkPacedWriterRace measures how often a compaction of the
// partition a writer appends to at 3-5 commits/s commits within its retry
// budget (10 s), and after how many attempts: reactor's staged commit path
// with commit events (the retry goes right after the writer's commit), the
// same without events (jittered backoff only), and the replaced path
// (iceberg-go re-stages every attempt), on tables with 100 and 500
// snapshots of history.
//
//	go test -run '^$' -bench PacedWriterRace -benchtime 10x ./executor/
//
// With REACTOR_BENCH_S3_RTT=10ms (s3RTTEnv) the table is on the embedded
// S3 gateway behind a proxy adding 10 ms to each round trip, at 100
// snapshots only (growing 500 over the link takes minutes);
// retry-attempt-ms is the compaction's last commit attempt (table load to
// catalog commit) in the runs that retried, writer-commit-ms the writer's
// mean commit over the same link, and attempt/writer their ratio.
func BenchmarkPacedWriterRace(b *testing.B) {
	store := newBenchStore(b)
	histories := []int{100, 500}
	if store != nil {
		histories = histories[:1]
	}
	for _, history := range histories {
		f := store.fixture(b)
		extra := growHistory(b, f, history)
		for _, path := range []string{"staged+events", "staged", "replay"} {
			b.Run(fmt.Sprintf("snapshots=%d/%s", history, path), func(b *testing.B) {
				exec := newExecutor(b, executor.Options{Catalog: f.icat, Logger: slog.New(slog.DiscardHandler)})
				if path == "replay" {
					executor.ReplayCommits(exec)
				}
				var committed, attempts, afterCommit, writerCommits, runs, retried int
				var elapsed, writing, attempt, writerBusy time.Duration
				for b.Loop() {
					part := fmt.Sprintf("%s-%d", path, runs)
					runs++
					for range 8 {
						f.commit(part, 4000)
					}
					pw := startPacedWriter(f, exec, path == "staged+events", part)
					time.Sleep(50 * time.Millisecond) // the writer is mid-cycle when the job starts
					start := time.Now()
					res, rep := exec.Run(f.ctx, f.job("defaults: {target_file_size: 64MiB, small_file_count: 5, commit_retry_time: 10s}", part))
					elapsed += time.Since(start)
					n, ran, tally := pw.halt(b)
					writerCommits += n
					writing += ran
					writerBusy += pw.busy
					if rep.Attempts > 1 {
						// A first attempt's span starts at the job's load
						// and holds the whole rewrite: only retries count.
						attempt += f.icat.lastAttempt()
						retried++
					}
					extra.Merge(tally)
					if res.Outcome == jobs.Succeeded {
						committed++
					} else if res.Outcome != jobs.GaveUp {
						b.Fatalf("outcome %v: %v", res.Outcome, res.Err)
					}
					attempts += rep.Attempts
					afterCommit += rep.RetriesAfterCommit
				}
				want := f.writer.Written()
				want.Merge(extra)
				if got := f.contents().Total; got != want {
					b.Fatalf("table %v, written %v", got, want)
				}
				b.ReportMetric(float64(committed)/float64(runs), "committed/op")
				b.ReportMetric(float64(attempts)/float64(runs), "attempts/op")
				b.ReportMetric(float64(afterCommit)/float64(runs), "retries-on-event/op")
				b.ReportMetric(float64(writerCommits)/writing.Seconds(), "writer-commits/s")
				b.ReportMetric(float64(elapsed.Milliseconds())/float64(runs), "job-ms/op")
				b.ReportMetric(float64(dataManifestCount(b, f)), "data-manifests")
				if writerCommits > 0 && retried > 0 {
					perCommit := writerBusy / time.Duration(writerCommits)
					b.ReportMetric(float64(attempt.Microseconds())/1000/float64(retried), "retry-attempt-ms")
					b.ReportMetric(float64(perCommit.Microseconds())/1000, "writer-commit-ms")
					b.ReportMetric(float64(attempt)/float64(retried)/float64(perCommit), "attempt/writer")
				}
			})
		}
	}
}
