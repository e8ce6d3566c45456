package executor

// RemovedSnapshots exposes the expiry guard to the external tests.
var RemovedSnapshots = removedSnapshots
