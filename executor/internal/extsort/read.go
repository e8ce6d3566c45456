package extsort

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/sortorder"
)

// New is the sorter of one group of rows of schema in bound's order, its
// buffers (and sorting's copies, through ctx) from mem, holding at most
// budget bytes of rows (a third for the run being read, a third for the
// run being sorted); Close removes what it spilled.
func New(ctx context.Context, bound sortorder.Bound, mem memory.Allocator, budget int64, schema *arrow.Schema) *Sorter {
	s := &Sorter{ctx: ctx, bound: bound, mem: mem, budget: budget, sc: schema, zorder: bound.Order().ZOrder,
		runSc: arrow.NewSchema(append(append([]arrow.Field{}, schema.Fields()...),
			arrow.Field{Name: sortKeyColumn, Type: arrow.BinaryTypes.Binary}), nil)}
	if s.zorder {
		s.sample = bound.NewSampler(sampleRows(budget, len(bound.Columns())))
	}
	return s
}

// Close removes the spill directory.
func (s *Sorter) Close() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// Spilled counts the runs spilled from the input so far: 0 while the rows
// read fit in memory (ReadRuns then returned them all).
func (s *Sorter) Spilled() int { return s.spilled }

// Rows counts the rows read.
func (s *Sorter) Rows() int64 { return s.rows }

// SortRuns sorts the spilled runs (a z-order's were spilled unsorted, its
// keys known only once the whole group was sampled) and merges them down
// to at most maxFanIn runs.
func (s *Sorter) SortRuns() error {
	if s.zorder {
		if err := s.sortZRuns(); err != nil {
			return err
		}
	}
	return s.reduceRuns()
}

// Merge merges the sorted runs into emit, in batches of about roundRows
// rows.
func (s *Sorter) Merge(roundRows int64, emit func(arrow.RecordBatch) error) error {
	start := time.Now()
	defer func() { s.mergeTook = time.Since(start) }()
	return s.merge(s.runs, roundRows, false, emit)
}

// sampleRows is how many rows a z-order's sample holds: an eighth of the
// budget's worth of normalised values, and at least 65,536 rows. A group
// of no more rows than that is sampled exactly.
func sampleRows(budget int64, columns int) int {
	return int(max(budget/8/int64(8*max(columns, 1)), 1<<16))
}

// ReadRuns reads the group: while the rows read fit in a third of the
// budget they are kept (and returned, for the in-memory sort); beyond, they
// are spilled in runs of a third of the budget, each sorted and written by
// a goroutine while the next is read.
func (s *Sorter) ReadRuns(ctx context.Context, records iter.Seq2[arrow.RecordBatch, error], spillRoot string) ([]arrow.RecordBatch, error) {
	start := time.Now()
	defer func() { s.readTook = time.Since(start) }()
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
		run, err := ConcatBatches(s.mem, s.sc, acc)
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
		size := max(RecordBytes(rec), 1)
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

// Stats are what a group's sort did, for the job's log.
type Stats struct {
	// Spilled counts the runs spilled from the input (0: sorted in
	// memory); ReadTook and MergeTook time the passes.
	Spilled             int
	ReadTook, MergeTook time.Duration
}

func (s *Sorter) Stats() Stats {
	return Stats{Spilled: s.spilled, ReadTook: s.readTook, MergeTook: s.mergeTook}
}
