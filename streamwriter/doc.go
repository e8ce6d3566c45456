// Package streamwriter is a small streaming writer: it appends batches of
// rows to a partitioned Iceberg table, one commit per batch, publishes a
// commit event for each, and keeps a running row count and checksum of
// everything it wrote. `reactor demo`, the end-to-end tests and the
// benchmarks use it to play the part of a Flink or Spark Streaming job.
//
// It owns the demo table's schema and the row checksum; it must not know
// about the planner or the executor.
package streamwriter
