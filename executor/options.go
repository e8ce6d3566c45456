package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Options tune the executor's data path.
type Options struct {
	// Concurrency bounds the output files written at once across every
	// job of the executor (reactor run's concurrency); 0 means 1.
	Concurrency int
	// SortMemory is the memory budget of one sort group (sort_memory;
	// 0: thresholds.DefaultSortMemory); SpillDir is where a group larger
	// than a third of it spills its sorted runs (spill_dir; empty:
	// reactor-spill under the system's temporary directory). Configure
	// creates SpillDir and checks it can write there.
	SortMemory int64
	SpillDir   string
	// HistoryBytes bounds the memory of the tables' history indexes,
	// which let expiry and orphan cleanup read only what changed since
	// they last looked (0: 512 MiB; negative: no indexes, every job walks
	// the table's whole history).
	HistoryBytes int64

	// icebergWriter writes every group through iceberg-go's
	// ExecuteCompactionGroup, one group at a time (tests compare the two
	// paths).
	icebergWriter bool
	// poisonFreed makes the job pools poison what Arrow frees (tests).
	poisonFreed bool
}

// Configure sets the executor's options; call it before the first Run.
func (e *Executor) Configure(o Options) error {
	if o.Concurrency < 0 {
		return errors.New("executor: concurrency must not be negative")
	}
	if o.SortMemory < 0 {
		return errors.New("executor: sort memory must not be negative")
	}
	if o.SpillDir != "" {
		if err := usableSpillDir(o.SpillDir); err != nil {
			return err
		}
	}
	e.opts = o
	e.tokens = newTokens(o.Concurrency)
	switch {
	case o.HistoryBytes < 0:
		e.hist = nil
	case o.HistoryBytes == 0:
		e.hist = newHistories(defaultHistoryBytes)
	default:
		e.hist = newHistories(o.HistoryBytes)
	}
	return nil
}

// usableSpillDir creates dir if need be and checks a file can be written
// there: a sort that finds out only when its group outgrows memory fails
// hours later.
func usableSpillDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("executor: spill_dir %q must be an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("executor: spill_dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".reactor-write-check-*")
	if err != nil {
		return fmt.Errorf("executor: spill_dir %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
