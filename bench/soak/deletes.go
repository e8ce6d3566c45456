package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/icereactor/reactor/streamwriter"
)

// The soak's position deletes (-delete-every): a table written by a job
// that also deletes rows it wrote a little earlier, the way a pipeline
// applying corrections does on a merge-on-read table. Every n-th commit
// asks for deleteRows rows of the commit n/2 before it to be deleted; a
// goroutine per table deletes them (streamwriter.DeleteRows: one
// position-delete snapshot), beside the appends, so a slow delete makes
// the appends miss no slot. Requests that find the deleter still busy are
// dropped: the delete rate follows what the table can take.
type deleter struct {
	w        *streamwriter.Writer
	every    int
	rows     int
	perBatch int // rows per commit, so commit k holds ids k*perBatch+1 ...
	log      *slog.Logger
	table    string
	reqs     chan int
	wg       sync.WaitGroup

	mu               sync.Mutex
	commits, deleted int64
	dropped          int
}

func newDeleter(w *streamwriter.Writer, table string, every, rows, perBatch int, log *slog.Logger) *deleter {
	return &deleter{w: w, table: table, every: every, rows: min(rows, perBatch), perBatch: perBatch, log: log,
		reqs: make(chan int, 1)}
}

// start runs the deleting goroutine until stop.
func (d *deleter) start(ctx context.Context) {
	d.wg.Go(func() {
		for seq := range d.reqs {
			first := int64((seq-d.every/2)*d.perBatch) + 1
			ids := make([]int64, d.rows)
			for i := range ids {
				ids[i] = first + int64(i)
			}
			snap, err := d.w.DeleteRows(ctx, ids...)
			if err != nil {
				if ctx.Err() == nil {
					d.log.Warn("delete failed", "table", d.table, "error", err)
				}
				continue
			}
			if snap != 0 {
				d.mu.Lock()
				d.commits++
				d.deleted += int64(len(ids))
				d.mu.Unlock()
			}
		}
	})
}

// committed is Pace's OnCommit hook: every n-th commit queues a delete.
// It must not be called once stop has begun.
func (d *deleter) committed(seq int) {
	if seq < d.every || seq%d.every != 0 {
		return
	}
	select {
	case d.reqs <- seq:
	default:
		d.mu.Lock()
		d.dropped++
		d.mu.Unlock()
	}
}

// stop waits for the delete under way.
func (d *deleter) stop() {
	close(d.reqs)
	d.wg.Wait()
}

// stats is what was deleted: delete commits, rows asked for, requests dropped.
func (d *deleter) stats() (commits, rows int64, dropped int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.commits, d.deleted, d.dropped
}
