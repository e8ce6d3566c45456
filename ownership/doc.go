// Package ownership is the one question every layer asks before it works
// on a table: does this replica own it now? With replicas, package lease
// answers it (its Manager implements [Tables]); a lone process owns every
// table, which each consumer spells as a nil [Tables].
//
// # Map
//
//   - ownership.go: [Tables], the interface the planner (state kept,
//     jobs scheduled), the triggers (events applied or forwarded), the
//     job pool (a job leaving its queue) and the executor (every commit)
//     take; [ErrNotHeld], the error of a table not held.
//
// The four consumers ask different strengths of the same question, and the
// interface keeps them apart: [Tables.Owns] is whether this replica works
// on the table now (its events, its state, its jobs starting), and
// [Tables.CommitDeadline] is the stricter fence a commit passes at commit
// time: the lease held, renewed recently enough that a commit starting
// now ends before any other replica may own the table, and connected.
//
// It holds no state and does no I/O. It must not decide who owns what
// (package lease) nor what a table's owner does (the consumers).
package ownership
