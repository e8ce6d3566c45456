package io.icereactor.reporter;

import java.util.Map;
import org.apache.iceberg.metrics.CommitReport;
import org.apache.iceberg.metrics.MetricsReport;
import org.apache.iceberg.metrics.MetricsReporter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes every Iceberg commit as reactor's commit event on NATS. Set it on a catalog with
 * {@code metrics-reporter-impl=io.icereactor.reporter.ReactorCommitReporter} and the {@code
 * reactor.*} properties (docs/events.md, "From Spark and Flink").
 *
 * <p>It never blocks and never fails the writer's commit: {@link #report} only offers the report
 * to a bounded queue (a full queue drops it and counts it), and a daemon thread publishes. No
 * exception leaves any method; bad settings are logged once and turn publishing off. Scan
 * reports are ignored.
 */
public class ReactorCommitReporter implements MetricsReporter {
  private static final Logger LOG = LoggerFactory.getLogger(ReactorCommitReporter.class);

  private volatile Publisher publisher;
  private volatile Counters disabled;
  private volatile boolean closed;
  private String catalogName;
  private String engineCatalog;

  /** The no-argument constructor Iceberg's CatalogUtil calls. */
  public ReactorCommitReporter() {}

  @Override
  public void initialize(Map<String, String> properties) {
    try {
      ReporterConfig config = ReporterConfig.from(properties);
      this.catalogName = config.catalogName;
      this.engineCatalog = config.engineCatalog;
      if (!config.problems().isEmpty()) {
        disable("invalid settings: " + String.join("; ", config.problems()));
        return;
      }
      this.publisher = Publishers.acquire(config);
    } catch (Throwable t) {
      disable("cannot start: " + Redact.error(t));
    }
  }

  private void disable(String why) {
    this.disabled = new Counters(Publishers.TOTALS);
    LOG.error(
        "reactor commit reporter: {}; no commit events will be published from this catalog", why);
  }

  @Override
  public void report(MetricsReport report) {
    try {
      if (!(report instanceof CommitReport)) {
        return;
      }
      long now = System.currentTimeMillis();
      Publisher p = publisher;
      if (p != null && !closed) {
        p.offer(new Publisher.Pending((CommitReport) report, now, catalogName, engineCatalog));
        return;
      }
      Counters c = disabled;
      if (c == null) {
        // Never initialized, or closed: nothing to publish with.
        c = new Counters(Publishers.TOTALS);
        disabled = c;
      }
      c.offered();
      c.dropped();
    } catch (Throwable t) {
      // Nothing may reach the writer: not even an Error of ours.
      LOG.debug("reactor commit reporter: report not taken: {}", Redact.error(t));
    }
  }

  @Override
  public void close() {
    try {
      if (closed) {
        return;
      }
      closed = true;
      Publisher p = publisher;
      if (p != null) {
        Publishers.release(p);
      }
    } catch (Throwable t) {
      LOG.debug("reactor commit reporter: close: {}", Redact.error(t));
    }
  }

  /**
   * This reporter's counts: those of its publisher, which reporters of equal settings in this
   * JVM share.
   */
  public ReporterStats stats() {
    Publisher p = publisher;
    if (p != null) {
      return p.counters.snapshot();
    }
    Counters c = disabled;
    return c == null ? new ReporterStats(0, 0, 0, 0, 0, 0) : c.snapshot();
  }

  /** The counts of every reporter this JVM (this class loader) has had. */
  public static ReporterStats totals() {
    return Publishers.TOTALS.snapshot();
  }
}
