package worker

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/lease"
)

// BenchmarkRollingRestart: three replicas, and each in turn stopped as
// SIGTERM stops it (Shutdown: events stop, jobs finish, leases released)
// and started again under its name, as a Kubernetes rolling update does.
// The figure is the longest time any shard — and so any table — had no
// serving owner: a shard of the stopping replica counts as unserved from
// the moment its Shutdown begins, and any shard counts as unserved while
// no live replica holds its lease (the handovers back to the restarted
// replica included). Shards are sampled every millisecond. Default lease
// TTL.
//
//	go test -run '^$' -bench BenchmarkRollingRestart -benchtime 3x ./worker/
func BenchmarkRollingRestart(b *testing.B) {
	const replicas = 3
	h := newHarness(b, restartThresholds, nil)
	name := func(i int) string { return fmt.Sprintf("pod-%d", i) }
	var mu sync.Mutex
	workers := make([]*Worker, replicas)
	stopping := make([]bool, replicas)
	startReplica := func(i int) {
		h.workerCfg = func(c *Config) { c.Leases = LeaseConfig{Replica: name(i), TTL: lease.DefaultTTL} }
		w := h.start()
		mu.Lock()
		workers[i], stopping[i] = w, false
		mu.Unlock()
	}
	for i := range replicas {
		startReplica(i)
	}
	shards := workers[0].Leases().Shards()
	served := func(shard int) bool {
		mu.Lock()
		defer mu.Unlock()
		for i, w := range workers {
			if w != nil && !stopping[i] && w.Leases() != nil && w.Leases().OwnsShard(shard) {
				return true
			}
		}
		return false
	}
	held := func(i int) int {
		mu.Lock()
		defer mu.Unlock()
		if workers[i] == nil || workers[i].Leases() == nil {
			return 0
		}
		return workers[i].Leases().HeldCount()
	}
	settled := func() bool {
		for s := range shards {
			if !served(s) {
				return false
			}
		}
		for i := range replicas {
			if held(i) < shards/replicas-1 {
				return false
			}
		}
		return true
	}
	h.eventually("the shards spread over the replicas", settled)

	// The sampler: the longest unserved spell of any shard, per restart.
	var longest time.Duration
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		since := make([]time.Time, shards)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			now := time.Now()
			for s := range shards {
				switch {
				case served(s):
					if !since[s].IsZero() {
						spell := now.Sub(since[s])
						mu.Lock()
						longest = max(longest, spell)
						mu.Unlock()
						if spell > 500*time.Millisecond {
							b.Logf("shard %d unserved for %s from %s", s, spell.Round(time.Millisecond), since[s].Format("15:04:05.000"))
						}
						since[s] = time.Time{}
					}
				case since[s].IsZero():
					since[s] = now
				}
			}
		}
	}()
	var pauses, stopPauses []time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := range replicas {
			mu.Lock()
			longest = 0
			stopping[i] = true
			w := workers[i]
			mu.Unlock()
			w.Shutdown(30 * time.Second)
			mu.Lock()
			workers[i] = nil
			mu.Unlock()
			h.eventually("the stopped replica's shards served", func() bool {
				for s := range shards {
					if !served(s) {
						return false
					}
				}
				return true
			})
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			stopPauses = append(stopPauses, longest)
			mu.Unlock()
			startReplica(i)
			h.eventually("the restarted replica's share back", settled)
			time.Sleep(20 * time.Millisecond) // let the sampler close the last spells
			mu.Lock()
			pauses = append(pauses, longest) // longest spans the stop and the rejoin
			mu.Unlock()
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	slices.Sort(pauses)
	slices.Sort(stopPauses)
	b.ReportMetric(float64(stopPauses[len(stopPauses)-1].Milliseconds()), "ms-stop-max")
	b.ReportMetric(float64(pauses[len(pauses)/2].Milliseconds()), "ms-paused-median")
	b.ReportMetric(float64(pauses[len(pauses)-1].Milliseconds()), "ms-paused-max")
	b.ReportMetric(float64(len(pauses)), "restarts")
}
