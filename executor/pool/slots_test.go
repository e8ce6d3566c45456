package pool

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/tablename"
)

// The order jobs get the pool's slots in: urgent first come first served;
// background after them unless it has waited backgroundSlack longer; with
// two slots a background backlog never takes the last one.
func TestSlotsOrder(t *testing.T) {
	// Each job carries the priority the planner gives its kind and reason.
	compact := func(table string) jobs.Job {
		return jobs.Job{Kind: jobkind.Compact, Table: tablename.Of([]string{table}), Priority: jobkind.PriorityUrgent}
	}
	orphans := func(table string) jobs.Job {
		return jobs.Job{Kind: jobkind.RemoveOrphans, Table: tablename.Of([]string{table}), Priority: jobkind.PriorityBackground}
	}
	countExpiry := jobs.Job{Kind: jobkind.ExpireSnapshots, Table: tablename.Of([]string{"x"}),
		Reasons: []jobs.Reason{{Threshold: "snapshot_count"}}, Priority: jobkind.PriorityUrgent}
	for _, tt := range []struct {
		name string
		size int
		// busy jobs hold every slot first; then queued arrive in order,
		// at the given minute; then the busy ones end one by one.
		busy   []jobs.Job
		queued []jobs.Job
		at     []time.Duration
		want   []string // the order the queued jobs start in
	}{
		{name: "urgent first come first served", size: 1, busy: []jobs.Job{compact("busy")},
			queued: []jobs.Job{compact("a"), compact("b"), compact("c")}, at: []time.Duration{0, 0, 0},
			want: []string{"a", "b", "c"}},
		{name: "a hot table's compaction before a maintenance backlog", size: 1, busy: []jobs.Job{orphans("busy")},
			queued: []jobs.Job{orphans("o1"), orphans("o2"), orphans("o3"), compact("hot")}, at: []time.Duration{0, 0, 0, time.Minute},
			want: []string{"hot", "o1", "o2", "o3"}},
		{name: "a background job that waited its slack ranks with urgent ones", size: 1, busy: []jobs.Job{compact("busy")},
			queued: []jobs.Job{orphans("old"), compact("late")}, at: []time.Duration{0, 11 * time.Minute},
			want: []string{"old", "late"}},
		{name: "expiry at the snapshot bound is urgent", size: 1, busy: []jobs.Job{compact("busy")},
			queued: []jobs.Job{orphans("o"), countExpiry}, at: []time.Duration{0, time.Minute},
			want: []string{"x", "o"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Unix(1_000_000, 0)
			s := newSlots(tt.size, metrics.New())
			s.now = func() time.Time { return clock }
			var releases []func()
			for _, j := range tt.busy {
				rel, ok := s.acquire(context.Background(), j)
				if !ok {
					t.Fatal("busy job got no slot")
				}
				releases = append(releases, rel)
			}
			var (
				mu      sync.Mutex
				started []string
				wg      sync.WaitGroup
			)
			for i, j := range tt.queued {
				clock = time.Unix(1_000_000, 0).Add(tt.at[i])
				waiting := len(s.queues[0]) + len(s.queues[1])
				wg.Add(1)
				go func() {
					defer wg.Done()
					rel, ok := s.acquire(context.Background(), j)
					if !ok {
						t.Error("no slot")
						return
					}
					mu.Lock()
					started = append(started, j.Table.String())
					mu.Unlock()
					rel() // hand the slot to the next one
				}()
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					s.mu.Lock()
					n := len(s.queues[0]) + len(s.queues[1])
					s.mu.Unlock()
					if n == waiting+1 || time.Now().After(deadline) {
						break
					}
				}
			}
			for _, rel := range releases {
				rel()
			}
			wg.Wait()
			if !slices.Equal(started, tt.want) {
				t.Errorf("started %v, want %v", started, tt.want)
			}
		})
	}
}

// With two slots, background jobs take at most one: an urgent job starts
// at once beside a running listing while more listings wait.
func TestSlotsKeepOneForUrgentJobs(t *testing.T) {
	s := newSlots(2, metrics.New())
	rel, ok := s.acquire(context.Background(), jobs.Job{Kind: jobkind.RemoveOrphans, Priority: jobkind.PriorityBackground})
	if !ok {
		t.Fatal("no slot")
	}
	second := make(chan struct{})
	go func() {
		r, ok := s.acquire(context.Background(), jobs.Job{Kind: jobkind.RemoveOrphans, Priority: jobkind.PriorityBackground})
		if ok {
			close(second)
			r()
		}
	}()
	for {
		s.mu.Lock()
		n := len(s.queues[jobkind.PriorityBackground])
		s.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	relU, ok := s.acquire(context.Background(), jobs.Job{Kind: jobkind.Compact, Priority: jobkind.PriorityUrgent})
	if !ok {
		t.Fatal("the urgent job got no slot")
	}
	select {
	case <-second:
		t.Fatal("a second background job took the last slot")
	default:
	}
	relU()
	select {
	case <-second:
		t.Fatal("a second background job started beside the first with two slots")
	default:
	}
	rel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case <-second:
	case <-ctx.Done():
		t.Fatal("the second background job never started after the first one ended")
	}
}
