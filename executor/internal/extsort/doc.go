// Package extsort sorts one group of rows larger than memory allows: the
// external merge sort behind sort and z-order rewrites whose group
// outgrows a third of sort_memory.
//
//   - read.go: New, ReadRuns (the group read, kept in memory while it fits
//     in a third of the budget, else spilled in sorted runs while the next
//     is read), Stats, and the size of a z-order's sample.
//   - extsort.go: the runs (Arrow IPC files with each row's sort key beside
//     it), SortRuns (a z-order's runs sorted once the whole group was
//     sampled, then merged down to maxFanIn), Merge (the stable k-way merge
//     into the output), ConcatBatches, RecordBytes.
//
// It owns the spill directory of one group and removes it (Close). It
// must not read or write table files: the rows come in and go out as Arrow
// batches (the executor's sort job does the rest).
package extsort
