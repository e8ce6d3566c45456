package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/arrowpool"
	"github.com/icereactor/reactor/executor/internal/datapath"
)

// The data path of a rewrite. A group's inputs are cut into units of
// about one output file each, and every unit is a pipeline: iceberg-go's
// scan reads and decodes its files (deletes applied) on its own goroutines
// while the unit's writer encodes and compresses what they decoded. Units
// of every group of a batch run at once, at most Options.Concurrency at a
// time across the executor (each holds a token while it writes), so a
// partition of several target files' worth is written on every core the
// concurrency allows, and memory is bounded by it: a unit holds one
// buffered row group (write.parquet.row-group-size-bytes) and a few
// decoded batches.
//
// A unit's buffers come from one pool per job (arrowpool) and are reused
// from batch to batch and file to file. Data files with deletes are
// decoded with Go's allocator: the delete readers keep strings that point
// into the decoded delete files, and the pool must never hand those
// buffers out again.

// jobPoolLimit bounds the freed buffers a job's pool keeps (each below a
// mebibyte: pages, small batches).
const jobPoolLimit = 64 << 20

// tokens bound the units written at once across the executor.
type tokens chan struct{}

func newTokens(n int) tokens { return make(tokens, max(n, 1)) }

func (t tokens) acquire(ctx context.Context) error {
	select {
	case t <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t tokens) release() { <-t }

// groupWriter writes one group of a batch.
type groupWriter func(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup) (table.CompactionGroupResult, error)

// writeGroups runs write on every group at once and returns their results
// in order, with the first error; a failed group cancels the others, and
// every result carries the files its group wrote, for the caller to
// delete.
func writeGroups(ctx context.Context, tbl *table.Table, groups []table.CompactionTaskGroup, write groupWriter,
	done func(i int, gr table.CompactionGroupResult)) ([]table.CompactionGroupResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]table.CompactionGroupResult, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gr, err := write(ctx, tbl, g)
			results[i] = gr
			if err != nil {
				errs[i] = fmt.Errorf("rewrite group %s: %w", g.PartitionKey, err)
				cancel(errs[i])
				return
			}
			done(i, gr)
		}()
	}
	wg.Wait()
	// The first group's own error, not the cancellation it caused in
	// the others.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return results, cause
	}
	return results, errors.Join(errs...)
}

// compactionGroupWriter writes bin-pack groups through reactor's writer,
// or through iceberg-go's where reactor's does not apply.
func (e *Executor) compactionGroupWriter(target int64, mem memory.Allocator) groupWriter {
	return func(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup) (table.CompactionGroupResult, error) {
		if !e.opts.icebergWriter {
			f, err := datapath.OwnWriterFor(ctx, tbl, g, target)
			if err == nil {
				return e.writeUnits(ctx, tbl, g, f, mem, datapath.SplitUnits(g.Tasks, target))
			}
			if !errors.Is(err, datapath.ErrNotOwnWriter) {
				return table.CompactionGroupResult{}, err
			}
			e.log.Debug("group written by iceberg-go's writer", "partition", g.PartitionKey, "why", err)
		}
		if err := e.tokens.acquire(ctx); err != nil {
			return table.CompactionGroupResult{}, err
		}
		defer e.tokens.release()
		// Outputs roll at reactor's target, not only the table
		// property's: a tier merge may hold several targets' worth.
		return table.ExecuteCompactionGroup(ctx, tbl, g, table.WithCompactionTargetFileSize(target))
	}
}

// writeUnits writes each unit of g under a token, all at once, and
// returns g's result with every file written (also on error, for cleanup).
func (e *Executor) writeUnits(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, f *datapath.Format,
	mem memory.Allocator, units [][]table.FileScanTask) (table.CompactionGroupResult, error) {
	res := table.CompactionGroupResult{PartitionKey: g.PartitionKey, BytesBefore: g.TotalSizeBytes,
		SafePosDeletes: table.CollectSafePositionDeletes(g.Tasks), SafeDeletionVectors: table.CollectSafeDeletionVectors(g.Tasks)}
	for _, t := range g.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	files := make([][]iceberg.DataFile, len(units))
	errs := make([]error, len(units))
	var wg sync.WaitGroup
	for i, tasks := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.tokens.acquire(ctx); err != nil {
				errs[i] = err
				return
			}
			defer e.tokens.release()
			files[i], errs[i] = datapath.WriteUnit(ctx, tbl, f, mem, i, tasks)
			if errs[i] != nil {
				cancel(errs[i])
			}
		}()
	}
	wg.Wait()
	for _, fs := range files {
		for _, df := range fs {
			res.NewDataFiles = append(res.NewDataFiles, df)
			res.BytesAfter += df.FileSizeBytes()
		}
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return res, cause
	}
	return res, errors.Join(errs...)
}

// newJobPool is the buffer pool of one job's data path.
func (e *Executor) newJobPool() memory.Allocator {
	return arrowpool.New(arrowpool.Options{Poison: e.opts.poisonFreed, Limit: jobPoolLimit})
}
