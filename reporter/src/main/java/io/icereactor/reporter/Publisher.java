package io.icereactor.reporter;

import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.ErrorListener;
import io.nats.client.JetStream;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.PublishAck;
import io.nats.client.PublishOptions;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.metrics.CommitReport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One bounded queue, one daemon thread and one NATS connection, shared by every reporter of a
 * configuration in the JVM ({@link Publishers}). The writer's thread only offers to the queue;
 * this thread maps, encodes and publishes each report through JetStream (stored in reactor's
 * commit stream, acknowledged, with a message id that makes a retry store nothing twice), retries
 * a failed publish with backoff for up to reactor.retry-timeout-ms, and reconnects. It logs the
 * first failure, then at most once a minute, and its counts when anything was lost.
 */
final class Publisher implements CommitReporterMXBean {
  private static final Logger LOG = LoggerFactory.getLogger(ReactorCommitReporter.class);
  private static final AtomicInteger IDS = new AtomicInteger();

  static final long FIRST_RETRY_MS = 100;
  static final long MAX_RETRY_MS = 5_000;
  static final long QUIET_MS = 60_000;
  static final int MAX_SKIP_NAMES = 1_000;

  /** What the writer's thread hands over: the report and when it came. */
  static final class Pending {
    final CommitReport report;
    final long reportedAtMillis;
    final String catalogName;
    final String engineCatalog;

    Pending(CommitReport report, long reportedAtMillis, String catalogName, String engineCatalog) {
      this.report = report;
      this.reportedAtMillis = reportedAtMillis;
      this.catalogName = catalogName;
      this.engineCatalog = engineCatalog;
    }
  }

  final int id = IDS.incrementAndGet();
  final ReporterConfig config;
  final Counters counters;
  private final ArrayBlockingQueue<Pending> queue;
  private final Thread thread;
  private final Options.Builder options;
  private final ExecutorService natsExecutor;
  private final ScheduledExecutorService natsScheduler;
  private volatile boolean stopping;
  private volatile long drainUntil;
  private volatile Connection conn;
  private JetStream js;

  // Touched by the publisher thread only.
  private long lastFailureLog;
  private long lastStatsLog;
  private ReporterStats lastLogged;
  private final Set<String> skippedNames = new LinkedHashSet<>();

  Publisher(ReporterConfig config, Counters totals) throws Exception {
    this.config = config;
    this.counters = new Counters(totals);
    this.queue = new ArrayBlockingQueue<>(config.queueSize);
    ThreadFactory daemons = daemonThreads("reactor-commit-reporter-" + id + "-nats");
    // jnats's own threads are not daemons: an open connection would keep a finished
    // spark-submit or Flink client from exiting.
    this.natsExecutor =
        new ThreadPoolExecutor(0, Integer.MAX_VALUE, 500, TimeUnit.MILLISECONDS, new SynchronousQueue<>(), daemons);
    ScheduledThreadPoolExecutor sched = new ScheduledThreadPoolExecutor(3, daemons);
    sched.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    sched.setRemoveOnCancelPolicy(true);
    this.natsScheduler = sched;
    this.options = natsOptions(config);
    this.lastStatsLog = System.currentTimeMillis();
    this.thread = new Thread(this::run, "reactor-commit-reporter-" + id);
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  private Options.Builder natsOptions(ReporterConfig c) throws Exception {
    Options.Builder b =
        new Options.Builder()
            .servers(c.url.split(","))
            .connectionName("reactor-commit-reporter")
            .connectionTimeout(Duration.ofSeconds(2))
            .maxReconnects(-1)
            .reconnectWait(Duration.ofMillis(500))
            // No buffering while disconnected: a publish fails at once and this thread's
            // retry (with the message id) decides, instead of a buffer that may never be sent.
            .reconnectBufferSize(0)
            .noEcho()
            .executor(natsExecutor)
            .scheduledExecutor(natsScheduler)
            .connectThreadFactory(daemonThreads("reactor-commit-reporter-" + id + "-connect"))
            .callbackThreadFactory(daemonThreads("reactor-commit-reporter-" + id + "-callback"))
            .errorListener(new QuietErrors())
            .connectionListener(new ConnectionEvents());
    if (c.credsFile != null) {
      b.authHandler(Nats.credentials(c.credsFile));
    }
    if (c.tls()) {
      b.sslContext(TlsFiles.context(c.tlsCaFile, c.tlsCertFile, c.tlsKeyFile));
    }
    return b;
  }

  private static ThreadFactory daemonThreads(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /** Never blocks: queues the report, or counts it dropped when the queue is full. */
  void offer(Pending p) {
    counters.offered();
    if (stopping || !queue.offer(p)) {
      counters.dropped();
    }
  }

  /**
   * Stops taking reports, publishes what is queued for up to drainMillis, then closes the
   * connection. What is still queued then is counted as dropped.
   */
  void stop(long drainMillis) {
    drainUntil = System.currentTimeMillis() + drainMillis;
    stopping = true;
    try {
      thread.join(drainMillis + 2_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      thread.interrupt();
    }
  }

  /** Publishes what is queued for up to waitMillis, without stopping (the JVM's shutdown hook). */
  void flush(long waitMillis) {
    long until = System.currentTimeMillis() + waitMillis;
    while (counters.snapshot().pending > 0 && System.currentTimeMillis() < until && thread.isAlive()) {
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private void run() {
    try {
      while (true) {
        Pending p = queue.poll(200, TimeUnit.MILLISECONDS);
        if (p != null) {
          handle(p);
        }
        logStats(false);
        if (stopping && (queue.isEmpty() || System.currentTimeMillis() >= drainUntil)) {
          break;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Throwable t) {
      LOG.error("reactor commit reporter: publisher thread stopped: {}", Redact.error(t));
    } finally {
      for (Pending left; (left = queue.poll()) != null; ) {
        counters.dropped();
      }
      stopping = true;
      close();
      logStats(true);
    }
  }

  private void handle(Pending p) throws InterruptedException {
    CommitEvents.Event ev;
    try {
      ev =
          CommitEvents.encode(
              p.report, p.reportedAtMillis, config.subjectPrefix, p.catalogName, p.engineCatalog);
    } catch (CommitEvents.Unmapped | RuntimeException e) {
      counters.skipped();
      noteSkipped(p.report, e);
      return;
    }
    publish(ev);
  }

  private void noteSkipped(CommitReport report, Exception why) {
    String name;
    try {
      name = Redact.cut(String.valueOf(report.tableName()));
    } catch (RuntimeException e) {
      name = "?";
    }
    if (skippedNames.size() < MAX_SKIP_NAMES && skippedNames.add(name)) {
      LOG.warn(
          "reactor commit reporter: no event for table \"{}\" (logged once per table): {}",
          name,
          why.getMessage());
    }
  }

  /** Publishes with retries until acknowledged or reactor.retry-timeout-ms has passed. */
  private void publish(CommitEvents.Event ev) throws InterruptedException {
    long deadline = System.currentTimeMillis() + config.retryTimeoutMs;
    long wait = FIRST_RETRY_MS;
    PublishOptions opts = PublishOptions.builder().messageId(ev.messageId).build();
    while (true) {
      try {
        JetStream j = connected();
        PublishAck ack = j.publish(ev.subject, ev.json, opts);
        if (ack.hasError()) {
          throw new IllegalStateException("JetStream: " + ack.getError());
        }
        counters.published();
        return;
      } catch (InterruptedException e) {
        counters.failed();
        throw e;
      } catch (Exception e) {
        long now = System.currentTimeMillis();
        if (now - lastFailureLog >= QUIET_MS) {
          lastFailureLog = now;
          LOG.warn(
              "reactor commit reporter: cannot publish the event of {} snapshot {} to {} yet"
                  + " (retrying for up to {} ms; logged at most once a minute): {}",
              Redact.cut(ev.table),
              ev.snapshotId,
              Redact.url(config.url),
              config.retryTimeoutMs,
              Redact.error(e));
        }
        long until = stopping ? Math.min(deadline, drainUntil) : deadline;
        if (now >= until) {
          counters.failed();
          return;
        }
        Thread.sleep(Math.min(wait, until - now));
        wait = Math.min(wait * 2, MAX_RETRY_MS);
      }
    }
  }

  /** The JetStream context of a live connection, connecting first if there is none. */
  private JetStream connected() throws Exception {
    Connection c = conn;
    if (c == null || c.getStatus() == Connection.Status.CLOSED) {
      c = Nats.connect(options.build());
      conn = c;
      js = c.jetStream(JetStreamOptions.builder().requestTimeout(Duration.ofSeconds(5)).build());
      LOG.info("reactor commit reporter: connected to {}", Redact.url(config.url));
    }
    return js;
  }

  private void close() {
    Connection c = conn;
    conn = null;
    if (c != null) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.debug("reactor commit reporter: closing the connection: {}", Redact.error(e));
      }
    }
    natsExecutor.shutdownNow();
    natsScheduler.shutdownNow();
  }

  /** Logs the counts every reactor.stats-log-interval-ms when reports were lost since last time. */
  private void logStats(boolean last) {
    long now = System.currentTimeMillis();
    if (!last && now - lastStatsLog < config.statsLogIntervalMs) {
      return;
    }
    lastStatsLog = now;
    ReporterStats s = counters.snapshot();
    boolean lost =
        lastLogged == null
            ? s.dropped + s.failed > 0
            : s.dropped + s.failed > lastLogged.dropped + lastLogged.failed;
    if (lost) {
      LOG.warn(
          "reactor commit reporter: commit events lost (reactor learns of those commits from the"
              + " table's next event): {}",
          s);
      lastLogged = s;
    }
  }

  // ---- JMX ----------------------------------------------------------------------------------

  @Override
  public String getUrl() {
    return Redact.url(config.url);
  }

  @Override
  public String getSubjectPrefix() {
    return config.subjectPrefix;
  }

  @Override
  public boolean isConnected() {
    Connection c = conn;
    return c != null && c.getStatus() == Connection.Status.CONNECTED;
  }

  @Override
  public long getOffered() {
    return counters.snapshot().offered;
  }

  @Override
  public long getPublished() {
    return counters.snapshot().published;
  }

  @Override
  public long getDropped() {
    return counters.snapshot().dropped;
  }

  @Override
  public long getFailed() {
    return counters.snapshot().failed;
  }

  @Override
  public long getSkipped() {
    return counters.snapshot().skipped;
  }

  @Override
  public long getPending() {
    return counters.snapshot().pending;
  }

  @Override
  public int getQueueCapacity() {
    return config.queueSize;
  }

  /** jnats's errors, at debug: the publish path logs what matters, once a minute. */
  private static final class QuietErrors implements ErrorListener {
    @Override
    public void errorOccurred(Connection conn, String error) {
      LOG.debug("reactor commit reporter: NATS error: {}", Redact.cut(error));
    }

    @Override
    public void exceptionOccurred(Connection conn, Exception exp) {
      LOG.debug("reactor commit reporter: NATS connection: {}", Redact.error(exp));
    }
  }

  private final class ConnectionEvents implements ConnectionListener {
    @Override
    public void connectionEvent(Connection c, Events type) {
      if (type == Events.DISCONNECTED || type == Events.RECONNECTED) {
        LOG.info("reactor commit reporter: NATS {} ({})", type.name().toLowerCase(), Redact.url(config.url));
      }
    }
  }
}
