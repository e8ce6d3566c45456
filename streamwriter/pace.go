package streamwriter

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// PaceOptions say how Pace commits.
type PaceOptions struct {
	// Rate is the commits per second to aim for (> 0).
	Rate float64
	// Duration bounds how long Pace writes; 0 writes until ctx ends. With a
	// duration at most ceil(Rate*Duration) commits are started, so the
	// count does not depend on how the last tick and the deadline race.
	Duration time.Duration
	// Commits, if positive, is the most commits Pace starts (with or
	// without a duration).
	Commits int
	// Rows is the number of rows per commit.
	Rows int
	// Updates, if positive, makes every commit an upsert (Upsert): that
	// many of its rows replace live rows of its partition by key.
	Updates int
	// Concurrency is how many commits may be in flight at once (default 1:
	// a streaming job commits one batch at a time).
	Concurrency int
	// Partition names the partition of the i-th commit (from 0).
	Partition func(i int) string
	// OnCommit, if set, is called after every successful commit, from the
	// goroutine that made it.
	OnCommit func(Committed)
}

// Committed describes one successful commit of Pace.
type Committed struct {
	Seq        int // the commit's index (Partition's argument)
	Partition  string
	SnapshotID int64
	Start      time.Time
	// Took is the commit's wall time: table load, Parquet write, retries
	// after conflicts, the catalog commit and the commit event.
	Took time.Duration
}

// PaceStats summarises a Pace run.
type PaceStats struct {
	Commits int // successful commits
	// Missed counts the commit slots skipped because every in-flight slot
	// was still busy when they came due: a writer that cannot keep up
	// commits less often, it does not burst to catch up.
	Missed int
}

// Pace commits o.Rows rows every 1/o.Rate seconds until o.Duration has
// passed or ctx ends, then waits for the commits in flight. The first
// failed commit stops it and is returned; ctx ending returns ctx.Err().
func (w *Writer) Pace(ctx context.Context, o PaceOptions) (PaceStats, error) {
	if !(o.Rate > 0) || math.IsInf(o.Rate, 0) {
		return PaceStats{}, fmt.Errorf("streamwriter: pace: rate must be positive, got %v", o.Rate)
	}
	if o.Rows < 1 || o.Partition == nil {
		return PaceStats{}, fmt.Errorf("streamwriter: pace: need rows >= 1 and a partition function")
	}
	if o.Updates < 0 || o.Updates > o.Rows {
		return PaceStats{}, fmt.Errorf("streamwriter: pace: updates must be between 0 and rows (%d), got %d", o.Rows, o.Updates)
	}
	interval := time.Duration(float64(time.Second) / o.Rate)
	stop, cancel := context.WithCancel(ctx)
	if o.Duration > 0 {
		stop, cancel = context.WithTimeout(ctx, o.Duration)
	}
	defer cancel()
	slots, commitsLeft := math.MaxInt, math.MaxInt
	if o.Duration > 0 {
		slots = int(math.Ceil(o.Rate * o.Duration.Seconds()))
	}
	if o.Commits > 0 {
		commitsLeft = o.Commits
	}
	busy := make(chan struct{}, max(o.Concurrency, 1))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		commits  int
		firstErr error
		missed   int
	)
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
loop:
	for slot, i := 0, 0; slot < slots && i < commitsLeft; i++ {
		due := start.Add(time.Duration(slot) * interval)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-stop.Done():
				break loop
			}
		}
		select {
		case busy <- struct{}{}:
		case <-stop.Done():
			break loop
		}
		if stop.Err() != nil { // both were ready; the end wins
			<-busy
			break
		}
		if late := time.Since(due); late >= interval {
			n := int(late / interval)
			missed += n
			slot += n
		}
		slot++
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-busy }()
			part := o.Partition(i)
			t0 := time.Now()
			// Commits run under ctx, not stop: a commit cut off half-way
			// would leave it unknown whether its rows are in the table.
			commit := w.Commit
			if o.Updates > 0 {
				commit = func(ctx context.Context, part string, rows int) (int64, error) {
					return w.Upsert(ctx, part, rows, o.Updates)
				}
			}
			id, err := commit(ctx, part, o.Rows)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				cancel()
				return
			}
			took := time.Since(t0)
			mu.Lock()
			commits++
			mu.Unlock()
			if o.OnCommit != nil {
				o.OnCommit(Committed{Seq: i, Partition: part, SnapshotID: id, Start: t0, Took: took})
			}
		}(i)
	}
	if o.Duration > 0 {
		<-stop.Done() // wait out the duration (or the first error)
	}
	wg.Wait()
	stats := PaceStats{Commits: commits, Missed: missed}
	if firstErr != nil {
		return stats, firstErr
	}
	return stats, ctx.Err()
}
