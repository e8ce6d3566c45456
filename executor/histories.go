package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/history"
)

// defaultHistoryBytes bounds the memory of the tables' history indexes
// (Options.HistoryBytes): about 70 MiB hold a table of 10,100 snapshots,
// 20,000 manifests and 100,000 live files.
const defaultHistoryBytes = 512 << 20

// histories are the executor's history indexes, one per table, lent to
// one job at a time: a job on a table whose index is lent out builds its
// own and the fuller of the two is kept. Indexes of tables not used for
// the longest are dropped first once they hold more than the budget.
type histories struct {
	mu     sync.Mutex
	budget int64
	tables map[string]*lentIndex
}

type lentIndex struct {
	x        *history.Index
	lent     bool
	lastUsed time.Time
}

func newHistories(budget int64) *histories {
	return &histories{budget: budget, tables: map[string]*lentIndex{}}
}

// borrow returns the index of the table named name, synced to meta with
// opts, for the caller's exclusive use until it gives it back. The first
// borrow of a table reads its whole history.
func (h *histories) borrow(ctx context.Context, name string, fs iceio.IO, meta table.Metadata,
	opts history.SyncOptions) (*history.Index, history.Changes, error) {
	uuid := meta.TableUUID().String()
	h.mu.Lock()
	var x *history.Index
	if l := h.tables[name]; l != nil && !l.lent && l.x.TableUUID() == uuid {
		x, l.lent = l.x, true
	}
	h.mu.Unlock()
	if x == nil {
		x = history.New(uuid)
	}
	ch, err := x.Sync(ctx, fs, meta, opts)
	if err != nil {
		h.giveBack(name, x)
		return nil, ch, fmt.Errorf("read table history: %w", err)
	}
	return x, ch, nil
}

// giveBack returns x, borrowed for the table named name.
func (h *histories) giveBack(name string, x *history.Index) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.tables[name]
	switch {
	case l == nil || l.x.TableUUID() != x.TableUUID():
		h.tables[name] = &lentIndex{x: x, lastUsed: time.Now()}
	case l.x == x:
		l.lent, l.lastUsed = false, time.Now()
	case l.lent || x.Snapshots() >= l.x.Snapshots():
		// Another job's index of the same table, built while this one
		// was lent: keep one of them.
		l.x, l.lent, l.lastUsed = x, false, time.Now()
	}
	h.evict()
}

// evict drops the least recently used indexes not lent out until the rest
// fit the budget.
func (h *histories) evict() {
	for {
		var total int64
		var oldest string
		for name, l := range h.tables {
			total += l.x.Bytes()
			if !l.lent && (oldest == "" || l.lastUsed.Before(h.tables[oldest].lastUsed)) {
				oldest = name
			}
		}
		if total <= h.budget || oldest == "" {
			return
		}
		delete(h.tables, oldest)
	}
}
