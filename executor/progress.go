package executor

// Progress of a long job, for a one-shot command's terminal line.

// Progress hears how far a job has come. A one-shot command on a big table
// runs for minutes, and a terminal with no sign of life looks hung; reactor
// run's jobs log a line per group instead and pass no Progress. Calls come
// from the job's goroutines at once, so an implementation must be safe for
// concurrent use, and cheap: the data path calls it once per output unit.
type Progress interface {
	// Phase starts a step of the job: what it does ("rewrite",
	// "delete", "check"), and how many files and bytes it will go
	// through (0 when not known in advance).
	Phase(name string, files, bytes int64)
	// Advance adds files and bytes the current step has finished.
	Advance(files, bytes int64)
}

func (e *Executor) phase(name string, files, bytes int64) {
	if e.opts.Progress != nil {
		e.opts.Progress.Phase(name, files, bytes)
	}
}

func (e *Executor) advance(files, bytes int64) {
	if e.opts.Progress != nil {
		e.opts.Progress.Advance(files, bytes)
	}
}
