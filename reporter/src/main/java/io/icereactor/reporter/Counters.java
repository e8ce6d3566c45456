package io.icereactor.reporter;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What happened to the reports a publisher was offered. Every offered report ends as exactly one
 * of published, dropped, failed or skipped, or is still pending (queued or being published):
 * offered == published + dropped + failed + skipped + pending. Each count also adds to the
 * JVM's totals ({@link ReactorCommitReporter#totals()}).
 */
final class Counters {
  private final Counters parent;
  private final AtomicLong offered = new AtomicLong();
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong skipped = new AtomicLong();
  private final AtomicLong pending = new AtomicLong();

  /** parent (may be null) receives every count too. */
  Counters(Counters parent) {
    this.parent = parent;
  }

  /** A report was handed to report() and is now pending. */
  void offered() {
    offered.incrementAndGet();
    pending.incrementAndGet();
    if (parent != null) {
      parent.offered();
    }
  }

  void published() {
    settle(published);
    if (parent != null) {
      parent.published();
    }
  }

  void dropped() {
    settle(dropped);
    if (parent != null) {
      parent.dropped();
    }
  }

  void failed() {
    settle(failed);
    if (parent != null) {
      parent.failed();
    }
  }

  void skipped() {
    settle(skipped);
    if (parent != null) {
      parent.skipped();
    }
  }

  // The outcome is counted before pending is lowered: a reader may see a report twice for a
  // moment, never not at all.
  private void settle(AtomicLong outcome) {
    outcome.incrementAndGet();
    pending.decrementAndGet();
  }

  ReporterStats snapshot() {
    long p = pending.get();
    return new ReporterStats(
        offered.get(), published.get(), dropped.get(), failed.get(), skipped.get(), p);
  }
}
