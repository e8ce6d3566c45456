package io.icereactor.reporter;

/**
 * A reading of a reporter's counters ({@link ReactorCommitReporter#stats()}) or of the JVM's
 * totals ({@link ReactorCommitReporter#totals()}). offered == published + dropped + failed +
 * skipped + pending, up to a report moving on while it is read.
 */
public final class ReporterStats {
  /** CommitReports handed to report(). */
  public final long offered;
  /** Events JetStream acknowledged: stored in reactor's commit stream. */
  public final long published;
  /** Reports never queued: the queue was full, or the settings are invalid (see the log). */
  public final long dropped;
  /** Events given up on after reactor.retry-timeout-ms of failed attempts. */
  public final long failed;
  /** Reports that name no table reactor can address (the mapping rules in docs/events.md). */
  public final long skipped;
  /** Reports queued or being published now. */
  public final long pending;

  ReporterStats(long offered, long published, long dropped, long failed, long skipped, long pending) {
    this.offered = offered;
    this.published = published;
    this.dropped = dropped;
    this.failed = failed;
    this.skipped = skipped;
    this.pending = pending;
  }

  @Override
  public String toString() {
    return "offered=" + offered + " published=" + published + " dropped=" + dropped + " failed="
        + failed + " skipped=" + skipped + " pending=" + pending;
  }
}
