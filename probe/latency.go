package probe

import (
	"slices"
	"sync"
	"time"
)

// Latencies records durations (commit latencies) with the time they ended,
// for per-interval and per-window percentiles. Safe for concurrent use.
type Latencies struct {
	mu    sync.Mutex
	all   []stamped
	since int // first index of the current interval
}

type stamped struct {
	at time.Time
	d  time.Duration
}

// Percentiles of a set of durations (nearest rank); zero when N is 0.
type Percentiles struct {
	N             int
	P50, P99, Max time.Duration
}

// Add records d, which ended at at.
func (l *Latencies) Add(at time.Time, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, stamped{at, d})
}

// Interval returns the percentiles of what was added since the previous
// call, and starts a new interval.
func (l *Latencies) Interval() Percentiles {
	l.mu.Lock()
	defer l.mu.Unlock()
	ds := make([]time.Duration, 0, len(l.all)-l.since)
	for _, s := range l.all[l.since:] {
		ds = append(ds, s.d)
	}
	l.since = len(l.all)
	return percentiles(ds)
}

// Window returns the percentiles of the durations that ended in [from, to).
func (l *Latencies) Window(from, to time.Time) Percentiles {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ds []time.Duration
	for _, s := range l.all {
		if !s.at.Before(from) && s.at.Before(to) {
			ds = append(ds, s.d)
		}
	}
	return percentiles(ds)
}

func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.999999) - 1 // nearest rank, 1-based
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Percentiles{N: len(ds), P50: rank(0.50), P99: rank(0.99), Max: ds[len(ds)-1]}
}
