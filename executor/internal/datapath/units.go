package datapath

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ReadAhead is how many decoded batches a unit's reader may get ahead of
// its writer.
const ReadAhead = 2

// OwnWriterFor prepares reactor's writer for g, or says why it does not
// apply (ErrNotOwnWriter).
func OwnWriterFor(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, target int64) (*Format, error) {
	if len(g.Tasks) == 0 {
		return nil, fmt.Errorf("%w: an empty group", ErrNotOwnWriter)
	}
	spec := tbl.Spec()
	first := g.Tasks[0].File
	for _, t := range g.Tasks {
		if int(t.File.SpecID()) != spec.ID() || !reflect.DeepEqual(t.File.Partition(), first.Partition()) {
			// iceberg-go's writer partitions the rows by the current spec.
			return nil, fmt.Errorf("%w: inputs of another partition spec or tuple", ErrNotOwnWriter)
		}
	}
	f, err := newFormat(ctx, tbl, first, target)
	if err != nil {
		return nil, err
	}
	// The scan's schema decides nothing is converted on the way: its
	// batches go to the writer as they are.
	sc, _, err := Scan(ctx, tbl).ReadTasks(ctx, g.Tasks[:1])
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
		return fmt.Errorf("%w: the scan reads %d columns, the table has %d", ErrNotOwnWriter, got.NumFields(), want.NumFields())
	}
	for i := range got.NumFields() {
		g, w := got.Field(i), want.Field(i)
		if g.Name != w.Name || !arrow.TypeEqual(g.Type, w.Type) {
			return fmt.Errorf("%w: the scan reads column %s as %s, the table writes %s as %s", ErrNotOwnWriter, g.Name, g.Type, w.Name, w.Type)
		}
	}
	return nil
}

// SplitUnits cuts a group's tasks, in order, into units of about one
// target file each, as even as the files allow. A group with deletes is
// one unit: its output size is not its input size, so its files roll on
// what is written, as iceberg-go's do.
func SplitUnits(tasks []table.FileScanTask, target int64) [][]table.FileScanTask {
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

// WriteUnit reads tasks (deletes applied) and writes their rows, in order,
// into files of the target size: the scan decodes on its goroutines while
// this one encodes.
func WriteUnit(ctx context.Context, tbl *table.Table, f *Format, mem memory.Allocator, unit int,
	tasks []table.FileScanTask) ([]iceberg.DataFile, error) {
	readCtx := ctx
	if !AnyDeletes(tasks) {
		readCtx = compute.WithAllocator(ctx, mem)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sc, records, err := Scan(ctx, tbl).ReadTasks(readCtx, tasks)
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
	batches := make(chan item, ReadAhead)
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
	w := NewRollingWriter(f, mem, unit)
	for it := range batches {
		if it.err != nil {
			w.Abort()
			return w.files, fmt.Errorf("read: %w", it.err)
		}
		rec := array.NewRecordBatch(f.arrowSchema, it.rec.Columns(), it.rec.NumRows())
		it.rec.Release()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			w.Abort()
			return w.files, err
		}
	}
	if err := ctx.Err(); err != nil {
		w.Abort()
		return w.files, err
	}
	return w.Close()
}

func AnyDeletes(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			return true
		}
	}
	return false
}
