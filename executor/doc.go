// Package executor runs the planner's jobs against Iceberg tables through
// iceberg-go and commits them without stepping on streaming writers: output
// files and their manifests are written once, and a commit conflict costs
// about what a writer's own commit costs — a refresh, a re-validation
// against only the snapshots committed since the last attempt (inputs
// still live, no new deletes against them) and a new manifest list —
// retried as soon as a writer has just committed, else with jittered
// exponential backoff.
//
// It owns every write reactor makes to a table and the clean-up of its own
// failed attempts. It must not decide what to compact (that is the
// planner's) or read events (the triggers').
package executor
