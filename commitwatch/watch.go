package commitwatch

import (
	"context"
	"sync"
	"time"
)

// Watch counts the commits observed per table (qualified names,
// "namespace.table") and wakes whoever waits for the next one. The zero
// value is ready; a Watch must not be copied after first use. Without
// commit events nothing is observed, and a wait lasts its timeout.
type Watch struct {
	mu     sync.Mutex
	tables map[string]*tableCommits
}

type tableCommits struct {
	seen uint64        // commits observed so far
	next chan struct{} // closed at the next observed commit
}

func (w *Watch) entry(name string) *tableCommits {
	if w.tables == nil {
		w.tables = map[string]*tableCommits{}
	}
	tc, ok := w.tables[name]
	if !ok {
		tc = &tableCommits{next: make(chan struct{})}
		w.tables[name] = tc
	}
	return tc
}

// Observed records that a commit to the table was just observed (a commit
// event or a new metadata file) and wakes its waiters. It never blocks. A
// nil Watch observes nothing (nobody waits).
func (w *Watch) Observed(name string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	tc := w.entry(name)
	tc.seen++
	close(tc.next)
	tc.next = make(chan struct{})
}

// Mark returns how many commits of the table were observed so far.
func (w *Watch) Mark(name string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.entry(name).seen
}

// Wait returns once a commit of the table is observed after mark (at once
// when one already was), after at most timeout, or when ctx ends. It
// reports whether a commit was observed.
func (w *Watch) Wait(ctx context.Context, name string, mark uint64, timeout time.Duration) bool {
	w.mu.Lock()
	tc := w.entry(name)
	if tc.seen > mark {
		w.mu.Unlock()
		return true
	}
	next := tc.next
	w.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-next:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}
