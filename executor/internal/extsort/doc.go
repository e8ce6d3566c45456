// Package extsort sorts one group of rows larger than memory allows: the
// external merge sort behind sort and z-order rewrites whose group
// outgrows a third of sort_memory.
//
//   - read.go: the Sorter's steps — New, ReadRuns (the group read, kept in
//     memory while it fits in a third of the budget, else spilled in
//     sorted runs while the next is read), SortRuns (a z-order's runs
//     sorted once the whole group was sampled, then merged down to
//     maxFanIn), Merge (the stable k-way merge into the output), Stats,
//     Close.
//   - extsort.go: the runs themselves: Arrow IPC files with each row's sort
//     key beside it, their cursors and the heap that merges them.
//   - batches.go: ConcatBatches, RecordBytes and the slicing and taking of
//     rows the runs are built from.
//
// It owns the spill directory of one group and removes it (Close). It
// must not read or write table files: the rows come in and go out as Arrow
// batches (the executor's sort job does the rest).
package extsort
