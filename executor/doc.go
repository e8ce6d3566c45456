// Package executor runs the planner's jobs against Iceberg tables through
// iceberg-go and commits them without stepping on streaming writers: output
// files are written once, and a commit conflict costs only a refresh, a
// re-validation (inputs still live, no new deletes against them) and a
// re-commit of the same files, retried with exponential backoff and jitter.
//
// It owns every write reactor makes to a table and the clean-up of its own
// failed attempts. It must not decide what to compact (that is the
// planner's) or read events (the triggers').
package executor
