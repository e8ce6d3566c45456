package io.icereactor.reporter;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The reporter's settings, read from the catalog's properties (every key starts with {@code
 * reactor.}; the catalog passes its whole property map). Two reporters with equal settings share
 * one {@link Publisher}.
 *
 * <p>Invalid settings never throw: {@link #problems()} lists them and the reporter then publishes
 * nothing (every report counted as dropped) and says why once.
 */
final class ReporterConfig {
  static final String URL = "reactor.nats.url";
  static final String SUBJECT_PREFIX = "reactor.nats.subject-prefix";
  static final String CREDS_FILE = "reactor.nats.creds-file";
  static final String TLS_CA_FILE = "reactor.nats.tls.ca-file";
  static final String TLS_CERT_FILE = "reactor.nats.tls.cert-file";
  static final String TLS_KEY_FILE = "reactor.nats.tls.key-file";
  static final String QUEUE_SIZE = "reactor.queue-size";
  static final String CATALOG_NAME = "reactor.catalog-name";
  static final String ENGINE_CATALOG = "reactor.engine-catalog";
  static final String RETRY_TIMEOUT_MS = "reactor.retry-timeout-ms";
  static final String STATS_LOG_INTERVAL_MS = "reactor.stats-log-interval-ms";

  static final String DEFAULT_URL = "nats://127.0.0.1:4222";
  static final String DEFAULT_SUBJECT_PREFIX = "iceberg.commits";
  static final int DEFAULT_QUEUE_SIZE = 10_000;
  static final long DEFAULT_RETRY_TIMEOUT_MS = 60_000;
  static final long DEFAULT_STATS_LOG_INTERVAL_MS = 60_000;
  static final int MAX_QUEUE_SIZE = 1_000_000;

  final String url;
  final String subjectPrefix;
  final String credsFile;
  final String tlsCaFile;
  final String tlsCertFile;
  final String tlsKeyFile;
  final int queueSize;
  final String catalogName;
  final String engineCatalog;
  final long retryTimeoutMs;
  final long statsLogIntervalMs;
  private final List<String> problems;

  private ReporterConfig(Map<String, String> props) {
    List<String> found = new ArrayList<>();
    this.url = text(props, URL, DEFAULT_URL);
    this.subjectPrefix = text(props, SUBJECT_PREFIX, DEFAULT_SUBJECT_PREFIX);
    this.credsFile = text(props, CREDS_FILE, null);
    this.tlsCaFile = text(props, TLS_CA_FILE, null);
    this.tlsCertFile = text(props, TLS_CERT_FILE, null);
    this.tlsKeyFile = text(props, TLS_KEY_FILE, null);
    this.catalogName = text(props, CATALOG_NAME, null);
    this.engineCatalog = text(props, ENGINE_CATALOG, null);
    this.queueSize =
        (int) number(props, QUEUE_SIZE, DEFAULT_QUEUE_SIZE, 1, MAX_QUEUE_SIZE, found);
    this.retryTimeoutMs =
        number(props, RETRY_TIMEOUT_MS, DEFAULT_RETRY_TIMEOUT_MS, 0, 86_400_000L, found);
    this.statsLogIntervalMs =
        number(
            props, STATS_LOG_INTERVAL_MS, DEFAULT_STATS_LOG_INTERVAL_MS, 1, 86_400_000L, found);
    String prefixProblem = CommitEvents.prefixProblem(subjectPrefix);
    if (prefixProblem != null) {
      found.add(SUBJECT_PREFIX + " " + prefixProblem);
    }
    for (String[] f :
        new String[][] {
          {CREDS_FILE, credsFile}, {TLS_CA_FILE, tlsCaFile}, {TLS_CERT_FILE, tlsCertFile}, {TLS_KEY_FILE, tlsKeyFile}
        }) {
      if (f[1] != null && !java.nio.file.Files.isReadable(java.nio.file.Paths.get(f[1]))) {
        found.add(f[0] + " names a file this process cannot read: " + Redact.cut(f[1]));
      }
    }
    if ((tlsCertFile == null) != (tlsKeyFile == null)) {
      found.add(TLS_CERT_FILE + " and " + TLS_KEY_FILE + " go together: a client certificate needs its key");
    }
    this.problems = Collections.unmodifiableList(found);
  }

  static ReporterConfig from(Map<String, String> props) {
    return new ReporterConfig(props == null ? Collections.emptyMap() : props);
  }

  /** What is wrong with the settings, one sentence each; empty when they are usable. */
  List<String> problems() {
    return problems;
  }

  boolean tls() {
    return tlsCaFile != null || tlsCertFile != null;
  }

  private static String text(Map<String, String> props, String key, String dflt) {
    String v = props.get(key);
    if (v == null || v.trim().isEmpty()) {
      return dflt;
    }
    return v.trim();
  }

  private static long number(
      Map<String, String> props, String key, long dflt, long min, long max, List<String> found) {
    String v = text(props, key, null);
    if (v == null) {
      return dflt;
    }
    try {
      long n = Long.parseLong(v);
      if (n < min || n > max) {
        found.add(key + " must be between " + min + " and " + max + ", got " + n);
        return dflt;
      }
      return n;
    } catch (NumberFormatException e) {
      found.add(key + " must be a whole number, got \"" + Redact.cut(v) + "\"");
      return dflt;
    }
  }

  /**
   * Equal settings share a publisher: everything but the catalog names, which only change how
   * a report becomes an event (each reporter maps its own reports).
   */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ReporterConfig)) {
      return false;
    }
    ReporterConfig c = (ReporterConfig) o;
    return url.equals(c.url)
        && subjectPrefix.equals(c.subjectPrefix)
        && Objects.equals(credsFile, c.credsFile)
        && Objects.equals(tlsCaFile, c.tlsCaFile)
        && Objects.equals(tlsCertFile, c.tlsCertFile)
        && Objects.equals(tlsKeyFile, c.tlsKeyFile)
        && queueSize == c.queueSize
        && retryTimeoutMs == c.retryTimeoutMs
        && statsLogIntervalMs == c.statsLogIntervalMs;
  }

  @Override
  public int hashCode() {
    return Objects.hash(url, subjectPrefix, credsFile, tlsCaFile, tlsCertFile, tlsKeyFile, queueSize);
  }

  /** For logs: the URL without credentials. */
  @Override
  public String toString() {
    return "url=" + Redact.url(url) + " subject-prefix=" + subjectPrefix + " queue-size=" + queueSize;
  }
}
