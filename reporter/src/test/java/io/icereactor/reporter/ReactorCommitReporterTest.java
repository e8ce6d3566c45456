package io.icereactor.reporter;

import static io.icereactor.reporter.TestSupport.await;
import static io.icereactor.reporter.TestSupport.props;
import static io.icereactor.reporter.TestSupport.report;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nats.client.api.MessageInfo;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reporter against a real nats-server (JetStream, reactor's commit stream) and real Iceberg
 * commits (Iceberg's in-memory catalog with metrics-reporter-impl set, as a Spark or Flink
 * catalog would have it). Nothing is timed: report() returning is shown by counting the calls
 * that returned, and every wait is bounded only so that a hang fails.
 */
class ReactorCommitReporterTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  @TempDir Path tmp;
  private final List<AutoCloseable> cleanup = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    for (int i = cleanup.size() - 1; i >= 0; i--) {
      cleanup.get(i).close();
    }
    await(() -> Publishers.live() == 0, WAIT, "every publisher stopped");
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    cleanup.add(c);
    return c;
  }

  private TestSupport.NatsServer nats() throws Exception {
    TestSupport.NatsServer s =
        closeLater(new TestSupport.NatsServer(TestSupport.freePort(), tmp.resolve("js"))).start();
    s.createCommitStream();
    return s;
  }

  private ReactorCommitReporter reporter(Map<String, String> props) {
    ReactorCommitReporter r = new ReactorCommitReporter();
    r.initialize(props);
    closeLater(r::close);
    return r;
  }

  private InMemoryCatalog catalog(String name, Map<String, String> reporterProps) {
    Map<String, String> p = new HashMap<>(reporterProps);
    p.put(CatalogProperties.METRICS_REPORTER_IMPL, ReactorCommitReporter.class.getName());
    p.put(CatalogProperties.WAREHOUSE_LOCATION, "mem://warehouse");
    InMemoryCatalog c = new InMemoryCatalog();
    c.initialize(name, p);
    closeLater(c);
    return c;
  }

  private static long append(Table t, int n) {
    DataFile f =
        DataFiles.builder(PartitionSpec.unpartitioned())
            .withPath(t.location() + "/data/f-" + n + ".parquet")
            .withFileSizeInBytes(100 + n)
            .withRecordCount(10 + n)
            .withFormat("parquet")
            .build();
    t.newFastAppend().appendFile(f).commit();
    return t.currentSnapshot().snapshotId();
  }

  @Test
  void realCommitsArePublishedAndDecodeWithReactorsDecoder() throws Exception {
    TestSupport.NatsServer nats = nats();
    InMemoryCatalog cat =
        catalog("my_catalog", props(nats.url(), ReporterConfig.CATALOG_NAME, "lake"));
    cat.createNamespace(Namespace.of("a"));
    cat.createNamespace(Namespace.of("a", "b"));
    cat.createNamespace(Namespace.of("db"));
    Table nested = cat.createTable(TableIdentifier.of(Namespace.of("a", "b"), "events"), SCHEMA);
    Table flat = cat.createTable(TableIdentifier.of("db", "t"), SCHEMA);
    Map<Long, String> want = new HashMap<>();
    for (int i = 0; i < 3; i++) {
      want.put(append(nested, i), "a.b.events");
      want.put(append(flat, i), "db.t");
    }

    await(() -> nats.streamCount() == 6, WAIT, "6 events in reactor's commit stream");
    List<MessageInfo> msgs = nats.commitStream();
    assertEquals(6, msgs.size());
    for (MessageInfo m : msgs) {
      TestSupport.Decoded d = TestSupport.decode(m.getData());
      assertEquals(0, d.status, "reactor's decoder refused " + new String(m.getData(), StandardCharsets.UTF_8) + ": " + d.stderr);
      long snap = Long.parseLong(field(d.stdout, "snapshot_id"));
      String table = want.remove(snap);
      assertTrue(table != null, "an event for a snapshot nobody committed (or twice): " + d.stdout);
      assertTrue(d.stdout.contains("\"qualified_name\":\"" + table + "\""), d.stdout);
      assertEquals("iceberg.commits." + table, m.getSubject());
      assertTrue(d.stdout.contains("\"catalog\":\"lake\""), d.stdout);
      assertTrue(d.stdout.contains("\"operation\":\"append\""), d.stdout);
      assertTrue(d.stdout.contains("\"added-data-files\":\"1\""), d.stdout);
      assertTrue(d.stdout.contains("\"committed_at\":\""), d.stdout);
    }
    assertTrue(want.isEmpty(), "no event for " + want);
    ReporterStats s = ReactorCommitReporter.totals();
    assertTrue(s.published >= 6, s.toString());
  }

  @Test
  void aFullQueueDropsAndCounts() throws Exception {
    // Nobody listens on this port: the publisher thread holds at most one report while it
    // retries, the queue holds 4, the rest are dropped.
    ReactorCommitReporter r =
        reporter(props("nats://127.0.0.1:" + TestSupport.freePort(), ReporterConfig.QUEUE_SIZE, "4"));
    for (int i = 1; i <= 100; i++) {
      r.report(report("cat.db.t", i));
    }
    ReporterStats s = r.stats();
    assertEquals(100, s.offered, s.toString());
    assertEquals(0, s.published, s.toString());
    assertTrue(s.pending <= 5 && s.pending >= 4, s.toString());
    assertEquals(100, s.dropped + s.pending + s.failed + s.skipped, s.toString());
    assertTrue(s.dropped >= 95, s.toString());
  }

  @Test
  void natsDownNeverBlocksACommit() throws Exception {
    // A server that accepts and never answers is the nastiest "down": a connect waits for its
    // timeout. The commits go on all the same; their reports are queued, then dropped.
    TestSupport.SilentServer silent = closeLater(new TestSupport.SilentServer());
    InMemoryCatalog cat = catalog("lake", props(silent.url(), ReporterConfig.QUEUE_SIZE, "8"));
    cat.createNamespace(Namespace.of("db"));
    Table t = cat.createTable(TableIdentifier.of("db", "t"), SCHEMA);
    Set<Long> committed = new TreeSet<>();
    int returned = 0;
    for (int i = 0; i < 40; i++) {
      committed.add(append(t, i));
      returned++;
    }
    assertEquals(40, returned);
    assertEquals(40, committed.size());
    int snapshots = 0;
    for (Snapshot ignored : cat.loadTable(TableIdentifier.of("db", "t")).snapshots()) {
      snapshots++;
    }
    assertEquals(40, snapshots, "every commit landed");
    ReactorCommitReporter direct = reporter(props(silent.url(), ReporterConfig.QUEUE_SIZE, "8"));
    for (int i = 0; i < 10_000; i++) {
      direct.report(report("lake.db.t", i + 1));
    }
    ReporterStats s = direct.stats(); // shared with the catalog's reporter: same settings
    assertEquals(10_040, s.offered, s.toString());
    assertEquals(0, s.published, s.toString());
    assertTrue(s.dropped >= 10_040 - 9, s.toString());
  }

  @Test
  void reconnectsAndPublishesOnceTheServerIsBack() throws Exception {
    TestSupport.NatsServer nats = nats();
    ReactorCommitReporter r = reporter(props(nats.url()));
    r.report(report("cat.db.t", 1));
    await(() -> r.stats().published == 1, WAIT, "the first event published");

    nats.stop();
    r.report(report("cat.db.t", 2));
    r.report(report("cat.db.t", 3));
    ReporterStats down = r.stats();
    assertEquals(3, down.offered, down.toString());
    assertEquals(1, down.published, down.toString());

    nats.start(); // same port, same JetStream store: the stream is still there
    await(() -> r.stats().published == 3, WAIT, "the two events published after the restart");
    ReporterStats s = r.stats();
    assertEquals(0, s.dropped + s.failed + s.skipped, s.toString());
    List<MessageInfo> msgs = nats.commitStream();
    List<String> ids = new ArrayList<>();
    for (MessageInfo m : msgs) {
      ids.add(m.getHeaders() == null ? "" : m.getHeaders().getFirst("Nats-Msg-Id"));
    }
    assertEquals(List.of("db.t.1", "db.t.2", "db.t.3"), ids, "each event stored once");
  }

  @Test
  void givesUpAfterTheRetryTimeoutAndCountsIt() throws Exception {
    // A server without reactor's stream (reactor not started yet): JetStream has no responder.
    TestSupport.NatsServer nats =
        closeLater(new TestSupport.NatsServer(TestSupport.freePort(), tmp.resolve("js"))).start();
    ReactorCommitReporter r = reporter(props(nats.url(), ReporterConfig.RETRY_TIMEOUT_MS, "300"));
    r.report(report("cat.db.t", 1));
    await(() -> r.stats().failed == 1, WAIT, "the event given up");
    nats.createCommitStream();
    r.report(report("cat.db.t", 2));
    await(() -> r.stats().published == 1, WAIT, "the next event published once the stream exists");
  }

  @Test
  void unmappedNamesAreSkippedAndCounted() throws Exception {
    TestSupport.NatsServer nats = nats();
    ReactorCommitReporter r = reporter(props(nats.url(), ReporterConfig.ENGINE_CATALOG, "lake"));
    r.report(report("db.t", 1)); // a CTAS transaction's name: no catalog prefix
    r.report(report("lake.t", 2)); // no namespace
    r.report(report("lake.db.t", 3));
    await(() -> r.stats().published == 1 && r.stats().skipped == 2, WAIT, "one published, two skipped");
    assertEquals(1, nats.commitStream().size());
  }

  @Test
  void invalidSettingsTurnPublishingOffAndCount() {
    ReactorCommitReporter r = reporter(props("nats://127.0.0.1:1", ReporterConfig.QUEUE_SIZE, "many"));
    r.report(report("cat.db.t", 1));
    ReporterStats s = r.stats();
    assertEquals(1, s.offered);
    assertEquals(1, s.dropped);
    assertEquals(0, Publishers.live());
  }

  @Test
  void aMissingCredentialsFileTurnsPublishingOff() {
    ReactorCommitReporter r =
        reporter(props("nats://127.0.0.1:1", ReporterConfig.CREDS_FILE, tmp.resolve("none.creds").toString()));
    r.report(report("cat.db.t", 1));
    assertEquals(1, r.stats().dropped);
    assertEquals(0, Publishers.live());
  }

  @Test
  void reportersWithEqualSettingsShareOnePublisherAndDaemonThreads() throws Exception {
    TestSupport.NatsServer nats = nats();
    ReactorCommitReporter a = reporter(props(nats.url()));
    ReactorCommitReporter b = reporter(props(nats.url(), ReporterConfig.CATALOG_NAME, "other"));
    assertEquals(1, Publishers.live());
    a.report(report("cat.db.t", 1));
    b.report(report("cat.db.u", 2));
    await(() -> a.stats().published == 2, WAIT, "both published");
    // jnats's own threads are not daemons by default: they would keep a finished job's JVM up.
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("reactor-commit-reporter")) {
        assertTrue(t.isDaemon(), t.getName() + " is not a daemon thread");
      }
    }
    a.close();
    assertEquals(1, Publishers.live(), "b still holds it");
    b.close();
    assertEquals(0, Publishers.live());
    b.report(report("cat.db.u", 3)); // after close: counted, never thrown
  }

  private static String field(String json, String name) {
    int at = json.indexOf("\"" + name + "\":");
    int start = at + name.length() + 3;
    int end = start;
    while (end < json.length() && (Character.isDigit(json.charAt(end)) || json.charAt(end) == '-')) {
      end++;
    }
    return json.substring(start, end);
  }
}
