package executor

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/sortorder"
	"github.com/icereactor/reactor/thresholds"
)

// writeSortedGroup reads a group's rows (deletes applied), sorts them and
// writes them as files of about the target size, each in row groups of an
// eighth of a file so the row groups' statistics are as tight as the
// files'. A group whose decoded rows fit in a third of sort_memory is
// sorted in memory; a larger one by the external merge sort (extsort.go).
// One group is sorted at a time per executor, so sort_memory bounds what
// sorting holds. The writer sees the table as unsorted: iceberg-go's
// would otherwise re-sort each batch by the table's default order,
// undoing a z-order.
//
// It returns the group's result and what the sort did.
func (e *Executor) writeSortedGroup(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, bound sortorder.Bound,
	target int64) (table.CompactionGroupResult, sortStats, error) {
	res := table.CompactionGroupResult{PartitionKey: g.PartitionKey, BytesBefore: g.TotalSizeBytes,
		SafePosDeletes: table.CollectSafePositionDeletes(g.Tasks), SafeDeletionVectors: table.CollectSafeDeletionVectors(g.Tasks)}
	for _, t := range g.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	if err := e.sortSlot.acquire(ctx); err != nil {
		return res, sortStats{}, err
	}
	defer e.sortSlot.release()
	writeTo, err := unsortedView(tbl)
	if err != nil {
		return res, sortStats{}, err
	}
	var f *outputFormat
	if !e.opts.icebergWriter {
		if f, err = ownWriterFor(ctx, writeTo, g, target); err != nil && !errors.Is(err, errNotOwnWriter) {
			return res, sortStats{}, err
		}
	}
	mem := e.newJobPool()
	readCtx := ctx
	if !anyDeletes(g.Tasks) {
		readCtx = compute.WithAllocator(ctx, mem)
	}
	schema, records, err := tbl.Scan().ReadTasks(readCtx, g.Tasks)
	if err != nil {
		return res, sortStats{}, fmt.Errorf("read group %s: %w", g.PartitionKey, err)
	}
	budget := e.sortMemory()
	// Sorting's copies (take, concatenation) come from the pool too.
	poolCtx := compute.WithAllocator(ctx, mem)
	s := &sorter{ctx: poolCtx, bound: bound, mem: mem, budget: budget, sc: schema, zorder: bound.Order().ZOrder,
		runSc: arrow.NewSchema(append(append([]arrow.Field{}, schema.Fields()...),
			arrow.Field{Name: sortKeyColumn, Type: arrow.BinaryTypes.Binary}), nil)}
	if s.zorder {
		s.sample = bound.NewSampler(sampleRows(budget, len(bound.Columns())))
	}
	defer func() {
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
	}()
	started := time.Now()
	acc, err := s.readRuns(ctx, records, e.spillDir())
	s.readTook = time.Since(started)
	defer func() {
		for _, b := range acc {
			b.Release()
		}
	}()
	if err != nil {
		return res, s.stats(), fmt.Errorf("read group %s: %w", g.PartitionKey, err)
	}
	rowsPerFile, rowGroupRows := sortOutputs(s.rows, g.TotalSizeBytes, target)
	sink := newSortSink(ctx, e, writeTo, f, schema, mem, rowsPerFile, rowGroupRows)
	fail := func(err error) (table.CompactionGroupResult, sortStats, error) {
		for _, df := range sink.abort(err) {
			res.NewDataFiles = append(res.NewDataFiles, df)
		}
		return res, s.stats(), err
	}
	if s.spilled == 0 {
		all, err := concatBatches(mem, schema, acc)
		if err != nil {
			return fail(fmt.Errorf("gather group %s: %w", g.PartitionKey, err))
		}
		sorted, err := bound.Sort(poolCtx, all)
		all.Release()
		if err != nil {
			return fail(fmt.Errorf("sort group %s: %w", g.PartitionKey, err))
		}
		err = sink.write(sorted)
		sorted.Release()
		if err != nil {
			return fail(fmt.Errorf("write sorted group %s: %w", g.PartitionKey, err))
		}
	} else {
		if s.zorder {
			if err := s.sortZRuns(); err != nil {
				return fail(fmt.Errorf("sort group %s: %w", g.PartitionKey, err))
			}
		}
		if err := s.reduceRuns(); err != nil {
			return fail(fmt.Errorf("sort group %s: %w", g.PartitionKey, err))
		}
		// While merging, the two thirds of the budget that held the run
		// being read and the run being sorted are free: one of them holds
		// merged rows queued for the files being encoded.
		sink.boundQueue(budget / 3)
		merging := time.Now()
		if err := s.merge(s.runs, rowGroupRows, false, sink.write); err != nil {
			return fail(fmt.Errorf("merge sorted runs of group %s: %w", g.PartitionKey, err))
		}
		s.mergeTook = time.Since(merging)
	}
	files, err := sink.close()
	for _, df := range files {
		res.NewDataFiles = append(res.NewDataFiles, df)
		res.BytesAfter += df.FileSizeBytes()
	}
	if err != nil {
		return res, s.stats(), fmt.Errorf("write sorted files for group %s: %w", g.PartitionKey, err)
	}
	return res, s.stats(), nil
}

// sortMemory is the budget of one sort group.
func (e *Executor) sortMemory() int64 {
	if e.opts.SortMemory > 0 {
		return e.opts.SortMemory
	}
	return int64(thresholds.DefaultSortMemory)
}

// sampleRows is how many rows a z-order's sample holds: an eighth of the
// budget's worth of normalised values, and at least 65,536 rows. A group
// of no more rows than that is sampled exactly.
func sampleRows(budget int64, columns int) int {
	return int(max(budget/8/int64(8*max(columns, 1)), 1<<16))
}

// readRuns reads the group: while the rows read fit in a third of the
// budget they are kept (and returned, for the in-memory sort); beyond, they
// are spilled in runs of a third of the budget, each sorted and written by
// a goroutine while the next is read.
func (s *sorter) readRuns(ctx context.Context, records iter.Seq2[arrow.RecordBatch, error], spillRoot string) ([]arrow.RecordBatch, error) {
	runLimit := max(s.budget/3, 1)
	var (
		acc      []arrow.RecordBatch
		accBytes int64
		spilling sync.WaitGroup
		spillErr error
		queue    chan arrow.RecordBatch
	)
	stop := func() {
		if queue != nil {
			close(queue)
			spilling.Wait()
			queue = nil
		}
	}
	defer stop()
	spill := func() error {
		if s.dir == "" {
			s.dir = filepath.Join(spillRoot, "sort-"+uuid.NewString())
			if err := os.MkdirAll(s.dir, 0o700); err != nil {
				return fmt.Errorf("create the spill directory: %w", err)
			}
			queue = make(chan arrow.RecordBatch)
			spilling.Add(1)
			go func() {
				defer spilling.Done()
				for run := range queue {
					if spillErr == nil {
						spillErr = s.spillRun(run)
					}
					run.Release()
				}
			}()
		}
		run, err := concatBatches(s.mem, s.sc, acc)
		for _, b := range acc {
			b.Release()
		}
		acc, accBytes = nil, 0
		if err != nil {
			return err
		}
		select {
		case queue <- run:
			return nil
		case <-ctx.Done():
			run.Release()
			return ctx.Err()
		}
	}
	for rec, err := range records {
		if err != nil {
			return acc, err
		}
		s.rows += rec.NumRows()
		if s.sample != nil {
			if err := s.sample.Add(rec); err != nil {
				rec.Release()
				return acc, err
			}
		}
		// A batch larger than what the run has room for is cut.
		size := max(recordBytes(rec), 1)
		for start, n := int64(0), rec.NumRows(); start < n; {
			room := max((runLimit-accBytes)*n/size, 1)
			end := min(start+room, n)
			part := rec
			if start > 0 || end < n {
				part = rec.NewSlice(start, end)
			} else {
				rec.Retain()
			}
			acc = append(acc, part)
			accBytes += size * (end - start) / n
			start = end
			if accBytes >= runLimit {
				if err := spill(); err != nil {
					rec.Release()
					return acc, err
				}
			}
		}
		rec.Release()
	}
	if s.dir != "" && len(acc) > 0 {
		if err := spill(); err != nil {
			return acc, err
		}
	}
	stop()
	return acc, spillErr
}

// spillDir is where sorts spill.
func (e *Executor) spillDir() string {
	if e.opts.SpillDir != "" {
		return e.opts.SpillDir
	}
	return filepath.Join(os.TempDir(), "reactor-spill")
}

// sortStats are what a group's sort did, for the job's log.
type sortStats struct {
	spilled             int
	readTook, mergeTook time.Duration
}

func (s *sorter) stats() sortStats {
	return sortStats{spilled: s.spilled, readTook: s.readTook, mergeTook: s.mergeTook}
}
