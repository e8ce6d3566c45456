// Package streamwriter is a small streaming writer: it appends batches of
// rows to a partitioned Iceberg table, one commit per batch, publishes a
// commit event for each, and keeps a running row count and checksum of
// everything it wrote. `reactor demo`, the end-to-end tests and the
// benchmarks use it to play the part of a Flink or Spark Streaming job.
//
// It owns the demo table's schema and the row checksum; it must not know
// about the planner or the executor.
//
// # Files
//
//   - writer.go: [Writer], [New] and Commit: one append per batch, the
//     commit event to a [Publisher].
//   - table.go: the demo table's [Schema] and [CreateTable].
//   - pace.go: [Writer.Pace], commits at a steady rate for a duration
//     (the soak benchmark's and the demo's writer).
//   - publish.go: [JetStreamPublisher], commit events through JetStream,
//     retried, with a message id per snapshot.
//   - deletes.go: merge-on-read deletes ([MergeOnReadProperties],
//     DeleteRows), as a CDC pipeline writes them.
//   - upsert.go: [Writer.Upsert], rows replaced by key in one row delta (an
//     equality delete and the rows again), as a Flink upsert sink commits.
//   - abandon.go: [Writer.Abandon], a write that crashed between writing its
//     files and committing them (orphans to clean up).
//   - checksum.go: [Tally], the row count and order-independent checksum
//     every test and benchmark checks the table against.
package streamwriter
