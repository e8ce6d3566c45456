package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/executor/internal/extsort"
	"github.com/icereactor/reactor/sortorder"
	"github.com/icereactor/reactor/thresholds"
)

// writeSortedGroup reads a group's rows (deletes applied), sorts them and
// writes them as files of about the target size, each in row groups of an
// eighth of a file so the row groups' statistics are as tight as the
// files'. A group whose decoded rows fit in a third of sort_memory is
// sorted in memory; a larger one by the external merge sort (package extsort).
// One group is sorted at a time per executor, so sort_memory bounds what
// sorting holds. The writer sees the table as unsorted: iceberg-go's
// would otherwise re-sort each batch by the table's default order,
// undoing a z-order.
//
// It returns the group's result and what the sort did.
func (e *Executor) writeSortedGroup(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, bound sortorder.Bound,
	target int64) (table.CompactionGroupResult, extsort.Stats, error) {
	res := table.CompactionGroupResult{PartitionKey: g.PartitionKey, BytesBefore: g.TotalSizeBytes,
		SafePosDeletes: table.CollectSafePositionDeletes(g.Tasks), SafeDeletionVectors: table.CollectSafeDeletionVectors(g.Tasks)}
	for _, t := range g.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	if err := e.sortSlot.acquire(ctx); err != nil {
		return res, extsort.Stats{}, err
	}
	defer e.sortSlot.release()
	writeTo, err := unsortedView(tbl)
	if err != nil {
		return res, extsort.Stats{}, err
	}
	var f *datapath.Format
	if !e.opts.icebergWriter {
		if f, err = datapath.OwnWriterFor(ctx, writeTo, g, target); err != nil && !errors.Is(err, datapath.ErrNotOwnWriter) {
			return res, extsort.Stats{}, err
		}
	}
	if f == nil {
		// iceberg-go's writer names its files itself: each is added to
		// the job's output intent before it is created.
		writeTo = recordingTable(ctx, writeTo)
	}
	mem := e.newJobPool()
	defer mem.Close()
	readCtx := ctx
	if !datapath.AnyDeletes(g.Tasks) {
		readCtx = compute.WithAllocator(ctx, mem)
	}
	schema, records, err := datapath.Scan(ctx, tbl).ReadTasks(readCtx, g.Tasks)
	if err != nil {
		return res, extsort.Stats{}, fmt.Errorf("read group %s: %w", g.PartitionKey, err)
	}
	budget := e.sortMemory()
	// Sorting's copies (take, concatenation) come from the pool too.
	poolCtx := compute.WithAllocator(ctx, mem)
	s := extsort.New(poolCtx, bound, mem, budget, schema)
	defer s.Close()
	acc, err := s.ReadRuns(ctx, records, e.spillDir())
	defer func() {
		for _, b := range acc {
			b.Release()
		}
	}()
	if err != nil {
		return res, s.Stats(), fmt.Errorf("read group %s: %w", g.PartitionKey, err)
	}
	rowsPerFile, rowGroupRows := sortOutputs(s.Rows(), g.TotalSizeBytes, target)
	sink := newSortSink(ctx, e, writeTo, f, schema, mem, rowsPerFile, rowGroupRows)
	fail := func(err error) (table.CompactionGroupResult, extsort.Stats, error) {
		for _, df := range sink.abort(err) {
			res.NewDataFiles = append(res.NewDataFiles, df)
		}
		return res, s.Stats(), err
	}
	if s.Spilled() == 0 {
		all, err := extsort.ConcatBatches(mem, schema, acc)
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
		if err := s.SortRuns(); err != nil {
			return fail(fmt.Errorf("sort group %s: %w", g.PartitionKey, err))
		}
		// While merging, the two thirds of the budget that held the run
		// being read and the run being sorted are free: one of them holds
		// merged rows queued for the files being encoded.
		sink.boundQueue(budget / 3)
		if err := s.Merge(rowGroupRows, sink.write); err != nil {
			return fail(fmt.Errorf("merge sorted runs of group %s: %w", g.PartitionKey, err))
		}
	}
	files, err := sink.close()
	for _, df := range files {
		res.NewDataFiles = append(res.NewDataFiles, df)
		res.BytesAfter += df.FileSizeBytes()
	}
	if err != nil {
		return res, s.Stats(), fmt.Errorf("write sorted files for group %s: %w", g.PartitionKey, err)
	}
	return res, s.Stats(), nil
}

// sortMemory is the budget of one sort group.
func (e *Executor) sortMemory() int64 {
	if e.opts.SortMemory > 0 {
		return e.opts.SortMemory
	}
	return int64(thresholds.DefaultSortMemory)
}

// spillDir is where sorts spill.
func (e *Executor) spillDir() string {
	if e.opts.SpillDir != "" {
		return e.opts.SpillDir
	}
	return filepath.Join(os.TempDir(), "reactor-spill")
}
