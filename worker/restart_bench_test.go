package worker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/streamwriter"
)

// restartThresholds are the streaming defaults with a threshold a dozen
// small commits cross.
const restartThresholds = `
defaults:
  target_file_size: 1MiB
  small_file_count: 5
  min_input_files: 5
`

// BenchmarkRestartToFirstJob: a replica is killed (its leases left
// behind, its NATS connection closed, as SIGKILL leaves them) while its
// table crosses a threshold, and restarted under its name; the figure is
// the time from the restart to the first job of that table starting, with
// the default lease TTL (the wait this replaces was TTL + TTL/3), and the
// time until the restarted replica owns the table again. Run alone and
// as each of three replicas in turn (each restart kills the next replica
// and times a table of its own), the other two surviving.
//
//	go test -run '^$' -bench BenchmarkRestartToFirstJob -benchtime 10x ./worker/
func BenchmarkRestartToFirstJob(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			h := newHarness(b, restartThresholds, nil)
			jobs := h.recordJobs()
			name := func(i int) string { return fmt.Sprintf("pod-%d", i) }
			workers := make([]*Worker, replicas)
			for i := range workers {
				h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{Replica: name(i), TTL: lease.DefaultTTL} }
				workers[i] = h.start()
			}
			owner := func(tbl string) int {
				for i, w := range workers {
					if w != nil && w.Leases() != nil && w.Leases().Owns(tbl) {
						return i
					}
				}
				return -1
			}
			h.eventually("the table owned", func() bool { return owner("db.events") >= 0 })
			if replicas > 1 {
				h.eventually("the shards spread", func() bool {
					for _, w := range workers {
						if w.Leases().HeldCount() < w.Leases().Shards()/replicas-1 {
							return false
						}
					}
					return true
				})
			}
			// A table of each replica's: db.events for the first owner, a
			// new table for each other replica.
			tables := map[int]string{owner("db.events"): "db.events"}
			writers := map[string]*streamwriter.Writer{}
			for i := 0; len(tables) < replicas; i++ {
				if i > 256 {
					b.Fatal("no table name hashes to every replica's shards")
				}
				name := fmt.Sprintf("r%d", i)
				o := owner("db." + name)
				if _, taken := tables[o]; taken || o < 0 {
					continue
				}
				ident := table.Identifier{"db", name}
				if _, err := streamwriter.CreateTable(h.ctx, h.cat, ident, nil); err != nil {
					b.Fatal(err)
				}
				tables[o] = "db." + name
				writers["db."+name] = streamwriter.New(h.cat, ident, h.publish)
			}
			var waits, owned []time.Duration
			for n := 0; n < b.N; n++ {
				victim := n % replicas
				tbl := tables[victim]
				workers[victim].kill()
				workers[victim] = nil
				before := len(jobs.all())
				for range 6 {
					if w := writers[tbl]; w != nil {
						if _, err := w.Commit(h.ctx, "a", 20); err != nil {
							b.Fatal(err)
						}
					} else {
						h.commit("a", 20)
					}
				}
				h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{Replica: name(victim), TTL: lease.DefaultTTL} }
				start := time.Now()
				workers[victim] = h.start()
				h.eventually("the table owned again", func() bool { return owner(tbl) == victim })
				owned = append(owned, time.Since(start))
				var first events.JobEvent
				h.eventually("the first job after the restart", func() bool {
					for _, ev := range jobs.all()[before:] {
						if ev.Table == tbl && ev.Phase == events.JobStarted {
							first = ev
							return true
						}
					}
					return false
				})
				waits = append(waits, first.Time.Sub(start))
				h.eventually("the job's end", func() bool {
					for _, ev := range jobs.all() {
						if ev.JobID == first.JobID && ev.Terminal() {
							return true
						}
					}
					return false
				})
			}
			slices.Sort(waits)
			slices.Sort(owned)
			b.ReportMetric(float64(owned[len(owned)/2].Milliseconds()), "ms-to-own-median")
			b.ReportMetric(float64(waits[len(waits)/2].Milliseconds()), "ms-median")
			b.ReportMetric(float64(waits[len(waits)-1].Milliseconds()), "ms-max")
			b.ReportMetric(float64(waits[len(waits)/2])/float64(lease.DefaultTTL+lease.DefaultTTL/3), "x-old-wait")
		})
	}
}
