package io.icereactor.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The mapping rules of docs/events.md ("From Spark and Flink"): a report's table name to
 * reactor's namespace and table, and the subject. Every event is also decoded by reactor's own
 * decoder.
 */
class CommitEventsTest {
  // reported name | engine catalog ('-' for none) | namespace | table | subject
  @ParameterizedTest(name = "{0} (engine catalog {1})")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      value = {
        "my_catalog.db.events        | -          | db         | events  | iceberg.commits.db.events",
        "my_catalog.a.b.c.events     | -          | a.b.c      | events  | iceberg.commits.a.b.c.events",
        "lake.db.events              | lake       | db         | events  | iceberg.commits.db.events",
        "lake.a.b.events             | lake       | a.b        | events  | iceberg.commits.a.b.events",
        "spark_catalog.db.t          | -          | db         | t       | iceberg.commits.db.t",
        "thrift://hms:9083/db.events | -          | db         | events  | iceberg.commits.db.events",
        "thrift://hms:9083/db.events | thrift://hms:9083 | db  | events  | iceberg.commits.db.events",
        "cat.odd ns.ev`en'ts ü       | -          | odd ns     | ev`en'ts ü | iceberg.commits.odd%20ns.ev`en'ts%20ü",
        "cat.db.star*gt>             | -          | db         | star*gt>   | iceberg.commits.db.star%2Agt%3E",
        "cat.db.a%20b                | -          | db         | a%20b      | iceberg.commits.db.a%20b",
        ".db.t                       | -          | db         | t       | iceberg.commits.db.t",
      })
  void mapsNames(String reported, String engine, String namespace, String table, String subject)
      throws Exception {
    CommitEvents.TableName n = CommitEvents.tableName(reported, "-".equals(engine) ? null : engine);
    assertEquals(namespace, n.namespace());
    assertEquals(table, n.table);
    assertEquals(subject, CommitEvents.subject("iceberg.commits", n));
  }

  @ParameterizedTest(name = "{0} (engine catalog {1}) is refused")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      value = {
        "events              | -     | no catalog, namespace",
        "cat.events          | -     | no namespace",
        "cat..t              | -     | empty level",
        "cat.db.             | -     | empty level",
        "db.events           | lake  | does not start with the engine catalog",
        "lakehouse.db.events | lake  | does not start with the engine catalog",
        "lake.events         | lake  | no namespace",
      })
  void refusesNames(String reported, String engine, String why) {
    CommitEvents.Unmapped e =
        assertThrows(
            CommitEvents.Unmapped.class,
            () -> CommitEvents.tableName(reported, "-".equals(engine) ? null : engine));
    assertTrue(e.getMessage().contains(why), e.getMessage());
  }

  @Test
  void refusesUnpairedSurrogatesAndLongNames() throws Exception {
    assertThrows(CommitEvents.Unmapped.class, () -> CommitEvents.tableName("cat.db.t\uD800x", null));
    assertThrows(CommitEvents.Unmapped.class, () -> CommitEvents.tableName("cat.db." + "x".repeat(1025), null));
    // 1,024 bytes is the limit reactor allows; a two-byte character counts twice.
    assertEquals(1024, CommitEvents.utf8Length(CommitEvents.tableName("cat.db." + "ü".repeat(512), null).table));
    assertThrows(CommitEvents.Unmapped.class, () -> CommitEvents.tableName("cat.db." + "ü".repeat(513), null));
  }

  @Test
  void refusesBadSubjectPrefixes() {
    for (String bad : new String[] {"", ".x", "x.", "a..b", "a b", "a.*", "a.>"}) {
      assertTrue(CommitEvents.prefixProblem(bad) != null, bad);
    }
    assertEquals(null, CommitEvents.prefixProblem("iceberg.commits"));
    assertTrue(ReporterConfig.from(Map.of(ReporterConfig.SUBJECT_PREFIX, "a.>")).problems().size() == 1);
  }

  /**
   * Awkward names survive the JSON and reactor's decoder names the same table. Reactor spells
   * a level holding a backtick quoted in backticks, the backtick doubled (package tablename),
   * so that it cannot read as a quote; the message id keeps the plain dotted spelling.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      value = {
        "cat.odd ns.ev`en'ts ü         | odd ns.ev`en'ts ü         | odd ns.`ev``en'ts ü`",
        "cat.db.quote\"back\\slash     | db.quote\"back\\slash     | db.quote\"back\\slash",
        "cat.a.b.c.events              | a.b.c.events              | a.b.c.events",
        "cat.db.emoji😀                | db.emoji😀                | db.emoji😀",
      })
  void decodesWithReactorsDecoder(String reported, String qualified, String reactorSpelling) throws Exception {
    CommitEvents.Event ev =
        CommitEvents.encode(TestSupport.report(reported, 42), 1_800_000_000_123L, "iceberg.commits", "lake", null);
    TestSupport.Decoded d = TestSupport.decode(ev.json);
    assertEquals(0, d.status, d.stderr);
    assertTrue(d.stdout.contains("\"qualified_name\":" + goJson(reactorSpelling)), d.stdout);
    assertTrue(d.stdout.contains("\"snapshot_id\":42"), d.stdout);
    assertTrue(d.stdout.contains("\"catalog\":\"lake\""), d.stdout);
    assertTrue(d.stdout.contains("\"committed_at\":\"2027-01-15T08:00:00.123Z\""), d.stdout);
    assertEquals(qualified + ".42", ev.messageId);
  }

  @Test
  void controlCharactersAreEscaped() throws Exception {
    CommitEvents.Event ev =
        CommitEvents.encode(TestSupport.report("cat.db.tab\tnew\nline\u0001", 7), 0, "iceberg.commits", null, null);
    String json = new String(ev.json, StandardCharsets.UTF_8);
    assertTrue(json.contains("\"table\":\"tab\\tnew\\nline\\u0001\""), json);
    assertEquals("iceberg.commits.db.tab%09new%0Aline%01", ev.subject);
    TestSupport.Decoded d = TestSupport.decode(ev.json);
    assertEquals(0, d.status, d.stderr);
    assertTrue(!json.contains("\"catalog\""), "no catalog field unless reactor.catalog-name is set: " + json);
  }

  @Test
  void summaryUsesIcebergsSnapshotSummaryNames() throws Exception {
    CommitEvents.Event ev =
        CommitEvents.encode(
            TestSupport.report(
                "cat.db.t",
                9,
                Map.of(
                    "added-data-files", "3",
                    "deleted-data-files", "1",
                    "added-records", "300",
                    "total-records", "1000",
                    "added-files-size", "4096",
                    "added-position-delete-files", "2")),
            0,
            "iceberg.commits",
            null,
            null);
    String json = new String(ev.json, StandardCharsets.UTF_8);
    for (String want :
        new String[] {
          "\"added-data-files\":\"3\"",
          "\"deleted-data-files\":\"1\"",
          "\"added-records\":\"300\"",
          "\"total-records\":\"1000\"",
          "\"added-files-size\":\"4096\"",
          "\"added-position-delete-files\":\"2\"",
          "\"engine-name\":\"spark\"",
          "\"operation\":\"append\"",
          "\"sequence_number\":3",
        }) {
      assertTrue(json.contains(want), want + " in " + json);
    }
    assertEquals(0, TestSupport.decode(ev.json).status);
  }

  /** The tests run on the Iceberg the pom names for them, not the one the code compiles against. */
  @Test
  void runsOnTheIcebergUnderTest() {
    String want = System.getProperty("reactor.iceberg.test.version");
    assertEquals(want, org.apache.iceberg.IcebergBuild.version(), "Iceberg on the test classpath");
  }

  private static String goJson(String s) {
    // Go's encoder writes these names as they are, escaping only quote and backslash.
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}
