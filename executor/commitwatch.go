package executor

import (
	"context"
	"sync"
	"time"
)

// commitWatch tells a commit retry when a writer has just committed to its
// table: right after a writer's commit is the longest quiet moment before
// its next one, so that is when a retry should land (docs/design.md#pitfall-redo-never-wins).
// It only learns of commits through CommitObserved; without commit events
// a retry waits out its jittered backoff as before.
type commitWatch struct {
	mu     sync.Mutex
	tables map[string]*tableCommits
}

type tableCommits struct {
	seen uint64        // commits observed so far
	next chan struct{} // closed at the next observed commit
}

func (w *commitWatch) entry(name string) *tableCommits {
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

func (w *commitWatch) observed(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tc := w.entry(name)
	tc.seen++
	close(tc.next)
	tc.next = make(chan struct{})
}

// mark returns how many commits of name were observed so far.
func (w *commitWatch) mark(name string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.entry(name).seen
}

// wait returns once a commit of name is observed after mark (at once when
// one already was), after at most timeout, or when ctx ends. It reports
// whether a commit was observed.
func (w *commitWatch) wait(ctx context.Context, name string, mark uint64, timeout time.Duration) bool {
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

// CommitObserved tells the executor that a commit to table (its qualified
// name, "namespace.table") was just observed: a commit event or a new
// metadata file. A commit of that table that lost a race and is waiting to
// retry attempts at once. It never blocks; the worker wires the planner's
// commit observations to it.
func (e *Executor) CommitObserved(table string) {
	e.watch.observed(table)
}
