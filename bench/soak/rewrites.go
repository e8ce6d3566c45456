package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// rewriteWatch counts the bytes a maintainer other than reactor rewrote:
// reactor reports its own in job events, a peer does not. Every second it
// reads each table's snapshots and adds the added-files-size of every
// replace snapshot it has not seen (a compaction's commit; expiry commits
// none). A replace snapshot lives as long as the peer's retention keeps
// it (interop/peers: Flink's maxSnapshotAge 10 minutes; Spark's
// retain_last 50, 2.5 s at 20 commits/s), so a one-second look misses
// none there; one it missed would make the peer's write amplification
// lower, not higher.
type rewriteWatch struct {
	mu    sync.Mutex
	bytes int64
	seen  map[int64]bool
	stop  context.CancelFunc
	done  chan struct{}
}

const rewriteWatchEvery = time.Second

func watchRewrites(ctx context.Context, cat catalog.Catalog, idents []table.Identifier) *rewriteWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &rewriteWatch{seen: map[int64]bool{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(rewriteWatchEvery)
		defer tick.Stop()
		for {
			for _, id := range idents {
				if tbl, err := cat.LoadTable(ctx, id); err == nil {
					w.add(tbl)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *rewriteWatch) add(tbl *table.Table) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range tbl.Metadata().Snapshots() {
		if w.seen[s.SnapshotID] {
			continue
		}
		w.seen[s.SnapshotID] = true
		if s.Summary == nil || s.Summary.Operation != table.OpReplace {
			continue
		}
		if n, err := strconv.ParseInt(s.Summary.Properties["added-files-size"], 10, 64); err == nil {
			w.bytes += n
		}
	}
}

// Bytes is the total so far.
func (w *rewriteWatch) Bytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes
}

// Stop ends the watch after one last look.
func (w *rewriteWatch) Stop() {
	w.stop()
	<-w.done
}
