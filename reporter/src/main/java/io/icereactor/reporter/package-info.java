/**
 * reactor's commit reporter: an Iceberg {@code MetricsReporter} that publishes every commit an
 * Iceberg Java writer (Spark, Flink, Kafka Connect, Trino) makes as reactor's commit event on
 * NATS, so that reactor maintains the tables those engines write.
 *
 * <ul>
 *   <li>{@link io.icereactor.reporter.ReactorCommitReporter}: the class catalogs load through
 *       {@code metrics-reporter-impl}; {@code report} only offers to a bounded queue.
 *   <li>{@link io.icereactor.reporter.ReporterConfig}: the {@code reactor.*} catalog properties.
 *   <li>{@link io.icereactor.reporter.CommitEvents}: a report's table name to reactor's namespace
 *       and table, the subject, and the event's JSON ({@link io.icereactor.reporter.Json}).
 *   <li>{@link io.icereactor.reporter.Publisher}: one queue, one daemon thread and one NATS
 *       connection per distinct configuration in a JVM, shared by the reporters that use it
 *       ({@link io.icereactor.reporter.Publishers}); JetStream publishes with retries and
 *       backoff; counters ({@link io.icereactor.reporter.Counters}) readable through JMX.
 *   <li>{@link io.icereactor.reporter.TlsFiles}: an SSLContext from PEM files.
 * </ul>
 *
 * <p>It must never block or fail the writer's commit: every exception stops here. It reads
 * nothing from the table and writes nothing but events.
 */
package io.icereactor.reporter;
