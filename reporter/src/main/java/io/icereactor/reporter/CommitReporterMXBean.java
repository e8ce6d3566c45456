package io.icereactor.reporter;

/**
 * A publisher's counters over JMX, as {@code io.icereactor.reporter:type=CommitReporter,id=N}
 * (one per distinct configuration in the JVM). See {@link Counters.Snapshot} for what each
 * counts.
 */
public interface CommitReporterMXBean {
  String getUrl();

  String getSubjectPrefix();

  boolean isConnected();

  long getOffered();

  long getPublished();

  long getDropped();

  long getFailed();

  long getSkipped();

  long getPending();

  int getQueueCapacity();
}
