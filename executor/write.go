package executor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/semaphore"

	"github.com/icereactor/reactor/arrowpool"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/executor/internal/extsort"
)

// sortSink writes a sort group's rows, arriving in order, into files of
// rowsPerFile rows (the last takes the rest), each in row groups of
// rowGroupRows rows: file boundaries fall on row counts, known before the
// first row arrives, so each file is encoded by its own writer while the
// rows of the next are still being sorted or merged, as many at once as
// the executor's tokens allow.
type sortSink struct {
	e            *Executor
	tbl          *table.Table // the unsorted view the files are written for
	f            *datapath.Format
	sc           *arrow.Schema // the rows' schema
	mem          memory.Allocator
	rowsPerFile  int64
	rowGroupRows int64

	ctx    context.Context
	cancel context.CancelCauseFunc
	cur    *sortFile
	rows   int64 // rows sent to cur
	files  []*sortFile

	// queued bounds the bytes of rows sent to files and not yet written
	// (queueLimit of them), when boundQueue set it: the merge then moves on
	// to the next file while earlier ones are still being encoded.
	queued     *semaphore.Weighted
	queueLimit int64
}

// sortBatch is rows sent to a file, and the bytes of queued they hold.
type sortBatch struct {
	rec    arrow.RecordBatch
	weight int64
}

// sortFile is one output file being written: its rows arrive on in.
type sortFile struct {
	in    chan sortBatch
	done  chan struct{}
	files []iceberg.DataFile
	err   error
}

func newSortSink(ctx context.Context, e *Executor, tbl *table.Table, f *datapath.Format, sc *arrow.Schema, mem memory.Allocator,
	rowsPerFile, rowGroupRows int64) *sortSink {
	s := &sortSink{e: e, tbl: tbl, f: f, sc: sc, mem: mem, rowsPerFile: max(rowsPerFile, 1), rowGroupRows: max(rowGroupRows, 1)}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	return s
}

// boundQueue lets the rows sent to files and not yet written take up to
// limit bytes, instead of a couple of batches a file. The external sort's
// merge, whose batches are small and come one after the other, can then
// hand a file its last rows and start the next file while the first is
// still encoding, so that files are encoded at once (as the executor's
// tokens allow) within the sort's budget.
func (s *sortSink) boundQueue(limit int64) {
	s.queueLimit = max(limit, 1)
	s.queued = semaphore.NewWeighted(s.queueLimit)
}

// sortQueueBatches is the capacity of a file's queue when boundQueue set
// a byte budget (which is what then bounds it).
const sortQueueBatches = 1024

// write sends rec's rows (it keeps its own references) to the files they
// belong to.
func (s *sortSink) write(rec arrow.RecordBatch) error {
	var perRow int64
	if s.queued != nil && rec.NumRows() > 0 {
		perRow = max(extsort.RecordBytes(rec)/rec.NumRows(), 1)
	}
	for start := int64(0); start < rec.NumRows(); {
		if err := context.Cause(s.ctx); err != nil {
			return err
		}
		if s.cur == nil || s.rows == s.rowsPerFile {
			s.next()
		}
		n := min(rec.NumRows()-start, s.rowsPerFile-s.rows)
		var weight int64
		if s.queued != nil {
			weight = min(perRow*n, s.queueLimit)
			if err := s.queued.Acquire(s.ctx, weight); err != nil {
				return context.Cause(s.ctx)
			}
		}
		part := rec.NewSlice(start, start+n)
		select {
		case s.cur.in <- sortBatch{part, weight}:
		case <-s.ctx.Done():
			part.Release()
			s.unqueue(weight)
			return context.Cause(s.ctx)
		}
		s.rows += n
		start += n
	}
	return nil
}

// next closes the current file's input and starts the next file.
func (s *sortSink) next() {
	if s.cur != nil {
		close(s.cur.in)
	}
	capacity := datapath.ReadAhead
	if s.queued != nil {
		capacity = sortQueueBatches
	}
	file := &sortFile{in: make(chan sortBatch, capacity), done: make(chan struct{})}
	s.cur, s.rows = file, 0
	s.files = append(s.files, file)
	index := len(s.files) - 1
	go func() {
		defer close(file.done)
		defer func() {
			for b := range file.in { // what was sent after a failure
				b.rec.Release()
				s.unqueue(b.weight)
			}
		}()
		if err := s.e.tokens.acquire(s.ctx); err != nil {
			file.err = err
			return
		}
		defer s.e.tokens.release()
		file.files, file.err = s.writeFile(index, file.in)
		if file.err != nil {
			s.cancel(file.err)
		}
	}()
}

// unqueue gives back the bytes of queued a written batch held.
func (s *sortSink) unqueue(weight int64) {
	if weight > 0 {
		s.queued.Release(weight)
	}
}

// writeFile writes one file from in (releasing what it takes).
func (s *sortSink) writeFile(index int, in <-chan sortBatch) ([]iceberg.DataFile, error) {
	if s.f != nil {
		w := datapath.NewRollingWriter(s.f, s.mem, index)
		w.Target, w.Props = math.MaxInt64, s.f.WriterProperties(s.mem, s.rowGroupRows)
		for b := range in {
			// The scan's columns under the table's Arrow schema (field
			// ids), as compaction writes them.
			withIDs := array.NewRecordBatch(s.f.ArrowSchema(), b.rec.Columns(), b.rec.NumRows())
			b.rec.Release()
			err := w.Write(withIDs)
			withIDs.Release()
			s.unqueue(b.weight)
			if err != nil {
				w.Abort()
				return w.Files(), err
			}
		}
		if err := context.Cause(s.ctx); err != nil {
			w.Abort()
			return w.Files(), err
		}
		return w.Close()
	}
	// iceberg-go's writer, for the tables reactor's does not write.
	records := func(yield func(arrow.RecordBatch, error) bool) {
		for b := range in {
			ok := yield(b.rec, nil)
			s.unqueue(b.weight)
			if !ok {
				return
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(s.ctx, s.tbl, s.sc, records, table.WithClusteredWrite(),
		table.WithTargetFileSize(math.MaxInt64), table.WithParquetRowGroupLimit(int(s.rowGroupRows))) {
		if err != nil {
			return files, fmt.Errorf("write sorted files: %w", err)
		}
		files = append(files, df)
	}
	return files, nil
}

// close finishes every file and returns them in order, also on error
// (every file written, for the caller to delete).
func (s *sortSink) close() ([]iceberg.DataFile, error) {
	if s.cur != nil {
		close(s.cur.in)
		s.cur = nil
	}
	var files []iceberg.DataFile
	var errs []error
	for _, f := range s.files {
		<-f.done
		files = append(files, f.files...)
		if f.err != nil {
			errs = append(errs, f.err)
		}
	}
	if cause := context.Cause(s.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return files, cause
	}
	return files, errors.Join(errs...)
}

// abort stops every file and returns those written, for cleanup.
func (s *sortSink) abort(err error) []iceberg.DataFile {
	s.cancel(err)
	files, _ := s.close()
	return files
}

// sortOutputs is how a sort group's rows go to files: rowsPerFile rows
// each, nfiles = input bytes / target, rounded up (files of about the
// target, the same number the in-memory sort wrote), in row groups of
// about an eighth of a file (several row groups a file, each with
// statistics as tight as the file's).
func sortOutputs(rows, inputBytes, target int64) (rowsPerFile, rowGroupRows int64) {
	nfiles := int64(1)
	if target > 0 && inputBytes > target {
		nfiles = (inputBytes + target - 1) / target
	}
	rowsPerFile = max((rows+nfiles-1)/nfiles, 1)
	rowGroupRows = min(max(rowsPerFile/8, 256), sortWriteBatchRows)
	return rowsPerFile, rowGroupRows
}

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

// writeCompactionGroup writes a bin-pack group through reactor's writer,
// or through iceberg-go's where reactor's does not apply.
func (e *Executor) writeCompactionGroup(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, target int64,
	mem memory.Allocator) (table.CompactionGroupResult, error) {
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
	// iceberg-go names its files itself: each is added to the job's
	// output intent before it is created.
	gr, err := table.ExecuteCompactionGroup(ctx, recordingTable(ctx, tbl), g, table.WithCompactionTargetFileSize(target))
	if err == nil {
		e.advance(int64(len(g.Tasks)), g.TotalSizeBytes)
	}
	return gr, err
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
				return
			}
			var bytes int64
			for _, t := range tasks {
				bytes += t.File.FileSizeBytes()
			}
			e.advance(int64(len(tasks)), bytes)
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

// newJobPool is the buffer pool of one job's data path; the job closes
// it when its data path is done (what it keeps mapped is not Go memory).
func (e *Executor) newJobPool() *arrowpool.Allocator {
	return arrowpool.New(arrowpool.Options{Poison: e.opts.poisonFreed, Limit: jobPoolLimit})
}
