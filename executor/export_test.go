package executor

// RemovedSnapshots exposes the expiry guard to the external tests.
var RemovedSnapshots = removedSnapshots

// ReReadReferencesBeforeEveryDelete makes e's orphan cleanup re-read the
// table's history before every delete, however recently it read it.
func ReReadReferencesBeforeEveryDelete(e *Executor) { e.referenceMaxAge = 0 }
