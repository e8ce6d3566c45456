package executor

// RemovedSnapshots exposes the expiry guard to the external tests.
var RemovedSnapshots = removedSnapshots

// ReplayCommits makes e commit data rewrites the way it did before the
// staged commit path (iceberg-go re-stages every attempt): the peer in the
// commit benchmarks.
func ReplayCommits(e *Executor) { e.replayCommits = true }

// ReReadReferencesBeforeEveryDelete makes e's orphan cleanup re-read the
// table's history before every delete, however recently it read it.
func ReReadReferencesBeforeEveryDelete(e *Executor) { e.referenceMaxAge = 0 }
