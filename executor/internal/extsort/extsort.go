package extsort

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/sortorder"
)

// The external merge sort of a sort group larger than sort_memory. The
// group's rows are read (deletes applied) in runs of a third of the
// budget; each run is sorted and written to the spill directory as an
// Arrow IPC file with its rows' sort keys beside them, while the next run
// is read; then the runs are merged by their keys (bytes.Compare; the keys
// are byte-comparable by construction, see sortorder) into the group's
// output files. Ties go to the earlier run, so the result is the stable
// sort of the group: the rows, order and files of the in-memory sort.
//
// A z-order's keys depend on the distribution of each column over the
// group, which is known only once every row was read: its runs are
// spilled unsorted while a sample of the group is taken
// (sortorder.Sampler), then sorted one at a time with the group's
// quantiles, then merged.
//
// Memory: the run being read and the run being sorted (each at most a
// third of the budget), or, while merging, one spilled batch per run, one
// merged batch and up to a third of the budget of merged rows queued for
// the output files (so that several are encoded at once); runs are merged
// maxFanIn at a time. The output files' writers (Options.Concurrency of
// them, a row group each) come on top.

// sortKeyColumn is the spilled runs' extra column holding each row's key.
const sortKeyColumn = "_reactor_sort_key"

// maxFanIn bounds the runs merged at once: more are first merged into
// longer runs.
const maxFanIn = 64

// spillBatchDivisor: a spilled batch holds about budget/spillBatchDivisor
// bytes of rows, so maxFanIn of them fit the merge's share of the budget.
const spillBatchDivisor = 4 * maxFanIn

// Sorter sorts one group.
type Sorter struct {
	ctx    context.Context
	bound  sortorder.Bound
	mem    memory.Allocator
	budget int64
	dir    string
	sc     *arrow.Schema // the rows' schema
	runSc  *arrow.Schema // with the key column
	zorder bool
	sample *sortorder.Sampler
	runs   []string
	// spilled counts the runs spilled from the input (merged runs aside).
	spilled int
	rows    int64
	// batchRows is how many rows a spilled batch holds.
	batchRows int64
	// readTook and mergeTook time the passes, for the log.
	readTook, mergeTook time.Duration
}

// spillRun sorts rec (or, for a z-order, only keeps it) and writes it to a
// new run file.
func (s *Sorter) spillRun(rec arrow.RecordBatch) error {
	path := filepath.Join(s.dir, fmt.Sprintf("run-%05d.arrow", len(s.runs)))
	if s.zorder {
		if err := s.writeRun(path, rec, nil); err != nil {
			return err
		}
	} else {
		sorted, keys, err := s.bound.SortWithKeys(s.ctx, s.mem, rec, nil)
		if err != nil {
			return err
		}
		err = s.writeRun(path, sorted, keys)
		sorted.Release()
		keys.Release()
		if err != nil {
			return err
		}
	}
	s.runs = append(s.runs, path)
	s.spilled++
	return nil
}

// writeRun writes rec (with keys, if not nil) to path in batches of
// batchRows rows.
func (s *Sorter) writeRun(path string, rec arrow.RecordBatch, keys *array.Binary) error {
	sc := s.sc
	if keys != nil {
		sc = s.runSc
	}
	n := rec.NumRows()
	if s.batchRows == 0 && n > 0 {
		s.batchRows = max(1024, s.budget/spillBatchDivisor*n/max(RecordBytes(rec), 1))
	}
	return writeRunFile(path, sc, s.mem, func(write func(arrow.RecordBatch) error) error {
		for start := int64(0); start < n; start += s.batchRows {
			end := min(start+s.batchRows, n)
			part := rec.NewSlice(start, end)
			if keys != nil {
				cols := append(append([]arrow.Array{}, part.Columns()...), array.NewSlice(keys, start, end))
				withKeys := array.NewRecordBatch(sc, cols, end-start)
				cols[len(cols)-1].Release()
				part.Release()
				part = withKeys
			}
			err := write(part)
			part.Release()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// writeRunFile writes the batches fill gives it to a new Arrow IPC file at
// path, through a buffer (the IPC writer writes each buffer of a batch on
// its own).
func writeRunFile(path string, sc *arrow.Schema, mem memory.Allocator, fill func(write func(arrow.RecordBatch) error) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("spill a sorted run: %w", err)
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	w, err := ipc.NewFileWriter(buf, ipc.WithSchema(sc), ipc.WithAllocator(mem))
	if err == nil {
		err = fill(w.Write)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if ferr := buf.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spill a sorted run: %w", err)
	}
	return nil
}

// sortZRuns sorts every spilled z-order run with the group's quantiles.
func (s *Sorter) sortZRuns() error {
	q := s.sample.Quantiles()
	for i, path := range s.runs {
		rec, err := s.readWhole(path)
		if err != nil {
			return err
		}
		sorted, keys, err := s.bound.SortWithKeys(s.ctx, s.mem, rec, q)
		rec.Release()
		if err != nil {
			return err
		}
		sortedPath := path + ".sorted"
		err = s.writeRun(sortedPath, sorted, keys)
		sorted.Release()
		keys.Release()
		if err != nil {
			return err
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		s.runs[i] = sortedPath
	}
	return nil
}

// readWhole reads an unsorted run back as one batch.
func (s *Sorter) readWhole(path string) (arrow.RecordBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(s.mem))
	if err != nil {
		return nil, fmt.Errorf("read a spilled run: %w", err)
	}
	defer r.Close()
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for i := range r.NumRecords() {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return nil, fmt.Errorf("read a spilled run: %w", err)
		}
		parts = append(parts, rec)
	}
	return ConcatBatches(s.mem, s.sc, parts)
}

// runCursor is a spilled run being merged: its current batch and the
// next row of it.
type runCursor struct {
	index int
	f     *os.File
	r     *ipc.FileReader
	next  int
	cur   arrow.RecordBatch
	keys  *array.Binary
	pos   int
}

func (c *runCursor) key() []byte { return c.keys.Value(c.pos) }

// load moves to the next batch; false at the end of the run.
func (c *runCursor) load() (bool, error) {
	if c.cur != nil {
		c.cur.Release()
		c.cur, c.keys = nil, nil
	}
	for c.next < c.r.NumRecords() {
		rec, err := c.r.RecordBatchAt(c.next)
		c.next++
		if err != nil {
			return false, fmt.Errorf("read a spilled run: %w", err)
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		c.cur, c.pos = rec, 0
		c.keys = rec.Column(int(rec.NumCols()) - 1).(*array.Binary)
		return true, nil
	}
	return false, nil
}

func (c *runCursor) close() {
	if c.cur != nil {
		c.cur.Release()
	}
	c.r.Close()
	c.f.Close()
}

// cursors is a heap of runs by their next key, ties to the earlier run.
type cursors []*runCursor

func (h cursors) Len() int { return len(h) }
func (h cursors) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key(), h[j].key()); c != 0 {
		return c < 0
	}
	return h[i].index < h[j].index
}
func (h cursors) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)   { *h = append(*h, x.(*runCursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// merge merges runs into emit, in rounds of at most roundRows rows: a
// round ends when a run's batch is used up, and its rows are gathered
// from the runs' contiguous ranges in one take. With keep, emitted batches
// carry the key column (for an intermediate run).
func (s *Sorter) merge(runs []string, roundRows int64, keep bool, emit func(arrow.RecordBatch) error) error {
	var open []*runCursor
	defer func() {
		for _, c := range open {
			c.close()
		}
	}()
	h := cursors{}
	for i, path := range runs {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(s.mem))
		if err != nil {
			f.Close()
			return fmt.Errorf("read a spilled run: %w", err)
		}
		c := &runCursor{index: i, f: f, r: r}
		open = append(open, c)
		ok, err := c.load()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	var picks []pick
	for h.Len() > 0 {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		picks = picks[:0]
		var spent *runCursor
		for h.Len() > 0 && int64(len(picks)) < roundRows {
			c := h[0]
			picks = append(picks, pick{c.index, c.pos})
			c.pos++
			if c.pos == c.keys.Len() {
				// Its batch is needed until the round is gathered.
				spent = heap.Pop(&h).(*runCursor)
				break
			}
			heap.Fix(&h, 0)
		}
		if err := s.gather(open, picks, keep, emit); err != nil {
			return err
		}
		if spent != nil {
			ok, err := spent.load()
			if err != nil {
				return err
			}
			if ok {
				heap.Push(&h, spent)
			}
		}
	}
	return nil
}

// pick is one merged row: its run and its row in the run's current batch.
type pick struct{ run, row int }

// gather builds the batch of picks (run, row), in order: each run's picked
// rows are a contiguous range of its current batch.
func (s *Sorter) gather(open []*runCursor, picks []pick, keep bool, emit func(arrow.RecordBatch) error) error {
	if len(picks) == 0 {
		return nil
	}
	ncols := len(s.sc.Fields())
	sc := s.sc
	if keep {
		ncols++
		sc = s.runSc
	}
	// The contiguous range of each run the round took, and where it
	// lands in their concatenation.
	type span struct{ start, end, base int }
	spans := map[int]*span{}
	var order []int
	for _, p := range picks {
		sp := spans[p.run]
		if sp == nil {
			sp = &span{start: p.row, end: p.row}
			spans[p.run] = sp
			order = append(order, p.run)
		}
		sp.end = p.row + 1
	}
	if len(order) == 1 {
		c, sp := open[order[0]], spans[order[0]]
		out := sliceColumns(sc, c.cur, ncols, int64(sp.start), int64(sp.end))
		defer out.Release()
		return emit(out)
	}
	base := 0
	parts := make([]arrow.RecordBatch, 0, len(order))
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, run := range order {
		sp := spans[run]
		sp.base = base
		base += sp.end - sp.start
		parts = append(parts, sliceColumns(sc, open[run].cur, ncols, int64(sp.start), int64(sp.end)))
	}
	joined, err := ConcatBatches(s.mem, sc, parts)
	if err != nil {
		return err
	}
	defer joined.Release()
	idx := make([]int32, len(picks))
	for i, p := range picks {
		sp := spans[p.run]
		idx[i] = int32(sp.base + p.row - sp.start)
	}
	out, err := takeRows(compute.WithAllocator(s.ctx, s.mem), joined, idx)
	if err != nil {
		return err
	}
	defer out.Release()
	return emit(out)
}

// reduceRuns merges runs maxFanIn at a time into longer ones until at most
// maxFanIn are left.
func (s *Sorter) reduceRuns() error {
	for len(s.runs) > maxFanIn {
		var next []string
		for start := 0; start < len(s.runs); start += maxFanIn {
			group := s.runs[start:min(start+maxFanIn, len(s.runs))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			path := filepath.Join(s.dir, fmt.Sprintf("merged-%s.arrow", uuid.NewString()))
			err := writeRunFile(path, s.runSc, s.mem, func(write func(arrow.RecordBatch) error) error {
				return s.merge(group, s.batchRows, true, write)
			})
			if err != nil {
				return fmt.Errorf("merge sorted runs: %w", err)
			}
			for _, p := range group {
				if err := os.Remove(p); err != nil {
					return err
				}
			}
			next = append(next, path)
		}
		s.runs = next
	}
	return nil
}
