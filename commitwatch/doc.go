// Package commitwatch is the one signal "a writer just committed to this
// table", shared by the layer that hears it and the layer that waits for
// it: the worker builds one [Watch] and hands it to the triggers, which
// call [Watch.Observed] when a commit event or a new metadata file names a
// commit their table's state has not applied, and to the executor, whose
// commit retry after a lost race waits on it ([Watch.Mark], [Watch.Wait]):
// right after a writer's commit is the longest quiet moment before its
// next one, so that is when a retry should land
// (docs/design.md#pitfall-redo-never-wins).
//
// # Map
//
//   - watch.go: [Watch]: per table, how many commits were observed and a
//     channel closed at the next one.
//
// It holds only those counts and does no I/O. It must not decide whether
// an event is a new commit (the triggers ask the planner's state) nor when
// to retry (the executor).
package commitwatch
