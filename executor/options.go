package executor

import "errors"

// Options tune the executor's data path.
type Options struct {
	// Concurrency bounds the output files written at once across every
	// job of the executor (reactor run's concurrency); 0 means 1.
	Concurrency int
	// SortMemory is the memory budget of one sort group; SpillDir where
	// its sorted runs go.
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
