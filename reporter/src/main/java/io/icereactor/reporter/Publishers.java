package io.icereactor.reporter;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The publishers of this JVM (of this class loader), one per distinct configuration, counted by
 * the reporters holding them. An engine opens a catalog, and so a reporter, many times (Flink per
 * committer task, Spark per session); they share one connection and one thread. The last
 * reporter to close a publisher stops it. On JVM shutdown every live publisher gets up to
 * {@link #SHUTDOWN_FLUSH_MS} to publish what is queued, so a short spark-submit job's last
 * commit is not lost to the exit.
 */
final class Publishers {
  private static final Logger LOG = LoggerFactory.getLogger(ReactorCommitReporter.class);

  static final long SHUTDOWN_FLUSH_MS = 2_000;
  static final long CLOSE_DRAIN_MS = 2_000;

  static final Counters TOTALS = new Counters(null);

  private static final Map<ReporterConfig, Entry> LIVE = new HashMap<>();
  private static boolean hooked;

  private static final class Entry {
    final Publisher publisher;
    final ObjectName mbean;
    int refs;

    Entry(Publisher publisher, ObjectName mbean) {
      this.publisher = publisher;
      this.mbean = mbean;
    }
  }

  private Publishers() {}

  /** The publisher for config, started when it is the first; release it with {@link #release}. */
  static synchronized Publisher acquire(ReporterConfig config) throws Exception {
    Entry e = LIVE.get(config);
    if (e == null) {
      Publisher p = new Publisher(config, TOTALS);
      ObjectName name = register(p);
      p.start();
      e = new Entry(p, name);
      LIVE.put(config, e);
      hookShutdown();
      LOG.info("reactor commit reporter: publishing commit events ({})", config);
    }
    e.refs++;
    return e.publisher;
  }

  /** Gives the publisher back; the last holder stops it (a bounded drain, off the commit path). */
  static void release(Publisher p) {
    Entry stop = null;
    synchronized (Publishers.class) {
      Entry e = LIVE.get(p.config);
      if (e == null || e.publisher != p) {
        return;
      }
      if (--e.refs == 0) {
        LIVE.remove(p.config);
        stop = e;
      }
    }
    if (stop != null) {
      unregister(stop.mbean);
      stop.publisher.stop(CLOSE_DRAIN_MS);
    }
  }

  static synchronized int live() {
    return LIVE.size();
  }

  private static ObjectName register(Publisher p) {
    try {
      ObjectName name = new ObjectName("io.icereactor.reporter:type=CommitReporter,id=" + p.id);
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      server.registerMBean(p, name);
      return name;
    } catch (Exception | LinkageError e) {
      LOG.debug("reactor commit reporter: no JMX bean: {}", Redact.error(e));
      return null;
    }
  }

  private static void unregister(ObjectName name) {
    if (name == null) {
      return;
    }
    try {
      ManagementFactory.getPlatformMBeanServer().unregisterMBean(name);
    } catch (Exception | LinkageError e) {
      LOG.debug("reactor commit reporter: JMX bean not removed: {}", Redact.error(e));
    }
  }

  private static void hookShutdown() {
    if (hooked) {
      return;
    }
    hooked = true;
    try {
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    List<Publisher> all;
                    synchronized (Publishers.class) {
                      all = new ArrayList<>();
                      LIVE.values().forEach(e -> all.add(e.publisher));
                    }
                    long until = System.currentTimeMillis() + SHUTDOWN_FLUSH_MS;
                    for (Publisher p : all) {
                      p.flush(Math.max(0, until - System.currentTimeMillis()));
                    }
                  },
                  "reactor-commit-reporter-shutdown"));
    } catch (IllegalStateException e) {
      // The JVM is already shutting down.
    }
  }
}
