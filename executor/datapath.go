package executor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/arrowpool"
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

// readAhead is how many decoded batches a unit's reader may get ahead of
// its writer.
const readAhead = 2

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
			f, err := ownWriterFor(ctx, tbl, g, target)
			if err == nil {
				return e.writeUnits(ctx, tbl, g, f, mem, splitUnits(g.Tasks, target))
			}
			if !errors.Is(err, errNotOwnWriter) {
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

// ownWriterFor prepares reactor's writer for g, or says why it does not
// apply (errNotOwnWriter).
func ownWriterFor(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, target int64) (*outputFormat, error) {
	if len(g.Tasks) == 0 {
		return nil, fmt.Errorf("%w: an empty group", errNotOwnWriter)
	}
	spec := tbl.Spec()
	first := g.Tasks[0].File
	for _, t := range g.Tasks {
		if int(t.File.SpecID()) != spec.ID() || !reflect.DeepEqual(t.File.Partition(), first.Partition()) {
			// iceberg-go's writer partitions the rows by the current spec.
			return nil, fmt.Errorf("%w: inputs of another partition spec or tuple", errNotOwnWriter)
		}
	}
	f, err := newOutputFormat(ctx, tbl, first, target)
	if err != nil {
		return nil, err
	}
	// The scan's schema decides nothing is converted on the way: its
	// batches go to the writer as they are.
	sc, _, err := tbl.Scan().ReadTasks(ctx, g.Tasks[:1])
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	if err := sameColumns(sc, f.arrowSchema); err != nil {
		return nil, err
	}
	return f, nil
}

func sameColumns(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("%w: the scan reads %d columns, the table has %d", errNotOwnWriter, got.NumFields(), want.NumFields())
	}
	for i := range got.NumFields() {
		g, w := got.Field(i), want.Field(i)
		if g.Name != w.Name || !arrow.TypeEqual(g.Type, w.Type) {
			return fmt.Errorf("%w: the scan reads column %s as %s, the table writes %s as %s", errNotOwnWriter, g.Name, g.Type, w.Name, w.Type)
		}
	}
	return nil
}

// splitUnits cuts a group's tasks, in order, into units of about one
// target file each, as even as the files allow. A group with deletes is
// one unit: its output size is not its input size, so its files roll on
// what is written, as iceberg-go's do.
func splitUnits(tasks []table.FileScanTask, target int64) [][]table.FileScanTask {
	var total int64
	for _, t := range tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			return [][]table.FileScanTask{tasks}
		}
		total += t.File.FileSizeBytes()
	}
	n := int64(1)
	if target > 0 {
		n = (total + target - 1) / target
	}
	n = min(max(n, 1), int64(len(tasks)))
	units := make([][]table.FileScanTask, 0, n)
	var sum int64
	start := 0
	for i, t := range tasks {
		sum += t.File.FileSizeBytes()
		// Close a unit where the running total passes its share.
		if int64(len(units)+1) < n && sum*n >= total*int64(len(units)+1) && i+1 < len(tasks) {
			units = append(units, tasks[start:i+1])
			start = i + 1
		}
	}
	return append(units, tasks[start:])
}

// writeUnits writes each unit of g under a token, all at once, and
// returns g's result with every file written (also on error, for cleanup).
func (e *Executor) writeUnits(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, f *outputFormat,
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
			files[i], errs[i] = writeUnit(ctx, tbl, f, mem, i, tasks)
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

// writeUnit reads tasks (deletes applied) and writes their rows, in order,
// into files of the target size: the scan decodes on its goroutines while
// this one encodes.
func writeUnit(ctx context.Context, tbl *table.Table, f *outputFormat, mem memory.Allocator, unit int,
	tasks []table.FileScanTask) ([]iceberg.DataFile, error) {
	readCtx := ctx
	if !anyDeletes(tasks) {
		readCtx = compute.WithAllocator(ctx, mem)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sc, records, err := tbl.Scan().ReadTasks(readCtx, tasks)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	if err := sameColumns(sc, f.arrowSchema); err != nil {
		return nil, err
	}
	type item struct {
		rec arrow.RecordBatch
		err error
	}
	batches := make(chan item, readAhead)
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		defer close(batches)
		for rec, err := range records {
			select {
			case batches <- item{rec, err}:
			case <-ctx.Done():
				if rec != nil {
					rec.Release()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	// Whatever happens below, the reader is stopped and what it decoded
	// released before the unit returns.
	defer func() {
		cancel()
		for it := range batches {
			if it.rec != nil {
				it.rec.Release()
			}
		}
		readers.Wait()
	}()
	w := newRollingWriter(f, mem, unit)
	for it := range batches {
		if it.err != nil {
			w.abort()
			return w.files, fmt.Errorf("read: %w", it.err)
		}
		rec := array.NewRecordBatch(f.arrowSchema, it.rec.Columns(), it.rec.NumRows())
		it.rec.Release()
		err := w.write(rec)
		rec.Release()
		if err != nil {
			w.abort()
			return w.files, err
		}
	}
	if err := ctx.Err(); err != nil {
		w.abort()
		return w.files, err
	}
	return w.close()
}

func anyDeletes(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			return true
		}
	}
	return false
}

// newJobPool is the buffer pool of one job's data path.
func (e *Executor) newJobPool() memory.Allocator {
	return arrowpool.New(arrowpool.Options{Poison: e.opts.poisonFreed, Limit: jobPoolLimit})
}
