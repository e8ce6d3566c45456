package io.icereactor.reporter;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.metrics.CommitMetricsResult;
import org.apache.iceberg.metrics.CommitReport;
import org.apache.iceberg.metrics.CounterResult;

/**
 * How a {@link CommitReport} becomes reactor's commit event (docs/events.md, "From Spark and
 * Flink"): which namespace and table its name means, the subject it goes out on, its JetStream
 * message id and its JSON. Pure functions; the publisher thread calls them, never the writer.
 */
final class CommitEvents {
  /** reactor's bound on catalog, namespace, table and operation (events.MaxNameBytes). */
  static final int MAX_NAME_BYTES = 1024;

  /** Entries of a report's metadata (engine name and version) copied into the summary. */
  static final int MAX_METADATA_ENTRIES = 32;

  private CommitEvents() {}

  /** A report that names no table reactor can address: skipped and counted, never sent. */
  static final class Unmapped extends Exception {
    private static final long serialVersionUID = 1L;

    Unmapped(String message) {
      super(message, null, false, false);
    }
  }

  /** A table as reactor names it: namespace levels and the table. */
  static final class TableName {
    final List<String> namespace;
    final String table;

    TableName(List<String> namespace, String table) {
      this.namespace = namespace;
      this.table = table;
    }

    /** The namespace dot-joined, as the event's "namespace" field. */
    String namespace() {
      return String.join(".", namespace);
    }

    /** namespace.table, reactor's name of the table. */
    String qualified() {
      return namespace() + "." + table;
    }

    @Override
    public String toString() {
      return qualified();
    }
  }

  /** One encoded event. */
  static final class Event {
    final String subject;
    final String messageId;
    final byte[] json;
    final String table;
    final long snapshotId;

    Event(String subject, String messageId, byte[] json, String table, long snapshotId) {
      this.subject = subject;
      this.messageId = messageId;
      this.json = json;
      this.table = table;
      this.snapshotId = snapshotId;
    }
  }

  /**
   * The table a report's name means. Iceberg names a table it loads from a catalog {@code
   * <catalog>.<namespace levels>.<table>} (for a catalog name holding ':' or '/', such as a Hive
   * URI, {@code <catalog>/<levels>.<table>}); a create or replace transaction (CTAS, RTAS) names
   * it without the catalog. With engineCatalog given, exactly that prefix is removed and a name
   * without it is refused (it is such a transaction's report, sent before the catalog commits the
   * table); without it, the first dot-separated token is the catalog, or everything up to the
   * last '/' when the name holds "://". The rest splits at every '.': the last part is the table,
   * the others the namespace. A level or a table name that itself holds a '.' cannot be told
   * apart from nesting, here as everywhere in reactor.
   */
  static TableName tableName(String reported, String engineCatalog) throws Unmapped {
    if (reported == null || reported.isEmpty()) {
      throw new Unmapped("the report names no table");
    }
    if (!wellFormed(reported)) {
      throw new Unmapped("the table name is not valid Unicode (an unpaired surrogate)");
    }
    String rest;
    if (engineCatalog != null) {
      String sep = engineCatalog.contains(":") || engineCatalog.contains("/") ? "/" : ".";
      String prefix = engineCatalog.endsWith(sep) ? engineCatalog : engineCatalog + sep;
      if (!reported.startsWith(prefix)) {
        throw new Unmapped(
            "the name does not start with the engine catalog \""
                + Redact.cut(engineCatalog)
                + "\" ("
                + ReporterConfig.ENGINE_CATALOG
                + "): a create or replace transaction reports before the table is committed");
      }
      rest = reported.substring(prefix.length());
    } else if (reported.contains("://")) {
      rest = reported.substring(reported.lastIndexOf('/') + 1);
    } else {
      int dot = reported.indexOf('.');
      if (dot < 0) {
        throw new Unmapped("the name has no catalog, namespace and table");
      }
      rest = reported.substring(dot + 1);
    }
    String[] parts = rest.split("\\.", -1);
    if (parts.length < 2) {
      throw new Unmapped("the name has no namespace (reactor maintains namespace.table)");
    }
    for (String p : parts) {
      if (p.isEmpty()) {
        throw new Unmapped("the name has an empty level");
      }
    }
    TableName name =
        new TableName(
            Arrays.asList(Arrays.copyOf(parts, parts.length - 1)), parts[parts.length - 1]);
    if (utf8Length(name.namespace()) > MAX_NAME_BYTES || utf8Length(name.table) > MAX_NAME_BYTES) {
      throw new Unmapped("the namespace or table is longer than " + MAX_NAME_BYTES + " bytes");
    }
    return name;
  }

  /**
   * The subject of a table's events: the prefix, then every namespace level and the table as one
   * token each ({@code iceberg.commits.a.b.events}), the subject reactor's fast lane follows for
   * a hot table. A character a NATS subject token cannot hold (space, tab, any control character,
   * '*', '>') is written as %XX; reactor reads the table from the event, never the subject, and
   * gives such a table no fast lane.
   */
  static String subject(String prefix, TableName name) {
    StringBuilder b = new StringBuilder(prefix.length() + 64).append(prefix);
    for (String level : name.namespace) {
      b.append('.');
      token(b, level);
    }
    b.append('.');
    token(b, name.table);
    return b.toString();
  }

  private static void token(StringBuilder b, String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c <= 0x20 || c == 0x7f || c == '*' || c == '>') {
        b.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
      } else {
        b.append(c);
      }
    }
  }

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  /** Why prefix cannot start a subject, or null when it can. */
  static String prefixProblem(String prefix) {
    if (prefix.isEmpty() || prefix.startsWith(".") || prefix.endsWith(".") || prefix.contains("..")) {
      return "must be dot-separated non-empty tokens, got \"" + Redact.cut(prefix) + "\"";
    }
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      if (c <= 0x20 || c == 0x7f || c == '*' || c == '>') {
        return "must hold no space, control character or wildcard, got \"" + Redact.cut(prefix) + "\"";
      }
    }
    return null;
  }

  /** The event for a report made at reportedAtMillis; catalogName (optional) goes in "catalog". */
  static Event encode(
      CommitReport report,
      long reportedAtMillis,
      String prefix,
      String catalogName,
      String engineCatalog)
      throws Unmapped {
    TableName name = tableName(report.tableName(), engineCatalog);
    if (report.snapshotId() <= 0) {
      throw new Unmapped("the snapshot id is not positive");
    }
    Json json = new Json(512).beginObject();
    if (catalogName != null) {
      json.field("catalog", catalogName);
    }
    json.field("namespace", name.namespace())
        .field("table", name.table)
        .field("snapshot_id", report.snapshotId())
        .field("sequence_number", report.sequenceNumber());
    String op = report.operation();
    if (op != null && wellFormed(op) && utf8Length(op) <= MAX_NAME_BYTES) {
      json.field("operation", op);
    }
    Map<String, String> summary = summary(report);
    if (!summary.isEmpty()) {
      json.name("summary").beginObject();
      for (Map.Entry<String, String> e : summary.entrySet()) {
        json.field(e.getKey(), e.getValue());
      }
      json.endObject();
    }
    json.field("committed_at", Instant.ofEpochMilli(reportedAtMillis).toString());
    json.endObject();
    return new Event(
        subject(prefix, name),
        name.qualified() + "." + report.snapshotId(),
        json.bytes(),
        name.qualified(),
        report.snapshotId());
  }

  /**
   * The snapshot summary's figures as Iceberg spells them (added-data-files, total-records, ...),
   * from the report's counters, and the report's metadata (engine-name, engine-version,
   * iceberg-version: what Iceberg also puts in the summary).
   */
  static Map<String, String> summary(CommitReport report) {
    Map<String, String> out = new LinkedHashMap<>();
    CommitMetricsResult m = report.commitMetrics();
    if (m != null) {
      put(out, "added-data-files", m.addedDataFiles());
      put(out, "deleted-data-files", m.removedDataFiles());
      put(out, "total-data-files", m.totalDataFiles());
      put(out, "added-delete-files", m.addedDeleteFiles());
      put(out, "added-equality-delete-files", m.addedEqualityDeleteFiles());
      put(out, "added-position-delete-files", m.addedPositionalDeleteFiles());
      put(out, "added-dvs", m.addedDVs());
      put(out, "removed-delete-files", m.removedDeleteFiles());
      put(out, "removed-equality-delete-files", m.removedEqualityDeleteFiles());
      put(out, "removed-position-delete-files", m.removedPositionalDeleteFiles());
      put(out, "removed-dvs", m.removedDVs());
      put(out, "total-delete-files", m.totalDeleteFiles());
      put(out, "added-records", m.addedRecords());
      put(out, "deleted-records", m.removedRecords());
      put(out, "total-records", m.totalRecords());
      put(out, "added-files-size", m.addedFilesSizeInBytes());
      put(out, "removed-files-size", m.removedFilesSizeInBytes());
      put(out, "total-files-size", m.totalFilesSizeInBytes());
      put(out, "added-position-deletes", m.addedPositionalDeletes());
      put(out, "removed-position-deletes", m.removedPositionalDeletes());
      put(out, "total-position-deletes", m.totalPositionalDeletes());
      put(out, "added-equality-deletes", m.addedEqualityDeletes());
      put(out, "removed-equality-deletes", m.removedEqualityDeletes());
      put(out, "total-equality-deletes", m.totalEqualityDeletes());
    }
    Map<String, String> meta = report.metadata();
    if (meta != null) {
      List<String> keys = new ArrayList<>(meta.keySet());
      keys.sort(null);
      int n = 0;
      for (String k : keys) {
        String v = meta.get(k);
        if (n >= MAX_METADATA_ENTRIES) {
          break;
        }
        if (k == null || v == null || out.containsKey(k) || !wellFormed(k) || !wellFormed(v)
            || utf8Length(k) > MAX_NAME_BYTES || utf8Length(v) > MAX_NAME_BYTES) {
          continue;
        }
        out.put(k, v);
        n++;
      }
    }
    return out;
  }

  private static void put(Map<String, String> out, String key, CounterResult c) {
    if (c != null) {
      out.put(key, Long.toString(c.value()));
    }
  }

  /** No unpaired surrogate: such a string has no UTF-8 form and would name another table. */
  static boolean wellFormed(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
          return false;
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  static int utf8Length(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }
}
