import io.icereactor.reporter.ReactorCommitReporter;
import io.icereactor.reporter.ReporterStats;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.metrics.CommitMetrics;
import org.apache.iceberg.metrics.CommitMetricsResult;
import org.apache.iceberg.metrics.CommitReport;
import org.apache.iceberg.metrics.DefaultMetricsContext;
import org.apache.iceberg.metrics.ImmutableCommitReport;
import org.apache.iceberg.types.Types;

/**
 * What the commit reporter adds to an Iceberg Java writer's commit, measured in one process:
 * Iceberg's JdbcCatalog on a SQLite file, two catalogs on it, "bench" with the reporter and
 * "bench_plain" without, one table in each; COMMITS fast appends (one data file each) to each,
 * taking turns, each commit() call timed as the writer sees it. Then report() alone, timed over
 * 2,000 calls. The events name catalog "bench", so a reactor on the same NATS acknowledges them
 * as another catalog's and loads nothing.
 *
 * <pre>CommitLatency DB WAREHOUSE NATS_URL COMMITS LABEL</pre>
 *
 * Prints one JSON line with the percentiles (ms; report() in microseconds) and the reporter's
 * counts.
 */
public class CommitLatency {
  private static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  public static void main(String[] a) throws Exception {
    String db = a[0], warehouse = a[1], url = a[2], label = a[4];
    int commits = Integer.parseInt(a[3]);
    // WAL, as the scenario's catalog file: both catalogs share the file.
    try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + db)) {
      c.createStatement().execute("PRAGMA journal_mode=WAL");
    }
    Map<String, String> props = new HashMap<>();
    props.put("uri", "jdbc:sqlite:" + db);
    props.put("jdbc.schema-version", "V1");
    props.put("jdbc.busy_timeout", "30000");
    props.put("warehouse", warehouse);
    Map<String, String> withProps = new HashMap<>(props);
    withProps.put("metrics-reporter-impl", ReactorCommitReporter.class.getName());
    withProps.put("reactor.nats.url", url);
    withProps.put("reactor.catalog-name", "bench");
    withProps.put("reactor.engine-catalog", "bench");
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
    Catalog with = CatalogUtil.loadCatalog("org.apache.iceberg.jdbc.JdbcCatalog", "bench", withProps, conf);
    Catalog plain = CatalogUtil.loadCatalog("org.apache.iceberg.jdbc.JdbcCatalog", "bench_plain", props, conf);
    Table tw = table(with, label);
    Table tp = table(plain, label);

    for (int i = 0; i < 20; i++) { // warm-up: class loading, JIT, the connection
      append(tw, i);
      append(tp, i);
    }
    long[] w = new long[commits], p = new long[commits];
    for (int i = 0; i < commits; i++) {
      // Taking turns, first one then the other, so drift in the machine's load hits both.
      if (i % 2 == 0) {
        w[i] = append(tw, 100 + i);
        p[i] = append(tp, 100 + i);
      } else {
        p[i] = append(tp, 100 + i);
        w[i] = append(tw, 100 + i);
      }
    }

    ReactorCommitReporter direct = new ReactorCommitReporter();
    direct.initialize(withProps);
    CommitReport report =
        ImmutableCommitReport.builder()
            .tableName("bench." + label + ".t")
            .snapshotId(1)
            .sequenceNumber(1)
            .operation("append")
            .metadata(Map.of())
            .commitMetrics(
                CommitMetricsResult.from(
                    CommitMetrics.of(new DefaultMetricsContext()), Map.of("added-data-files", "1")))
            .build();
    long[] r = new long[2000];
    for (int i = 0; i < r.length; i++) {
      long t0 = System.nanoTime();
      direct.report(report);
      r[i] = System.nanoTime() - t0;
    }
    ReporterStats before = ReactorCommitReporter.totals();
    long until = System.currentTimeMillis() + 10_000;
    while (ReactorCommitReporter.totals().pending > 0 && System.currentTimeMillis() < until) {
      Thread.sleep(50);
    }
    ReporterStats s = ReactorCommitReporter.totals();
    System.out.printf(
        "{\"label\":\"%s\",\"commits\":%d,\"with_p50_ms\":%.3f,\"without_p50_ms\":%.3f,"
            + "\"with_p90_ms\":%.3f,\"without_p90_ms\":%.3f,\"report_p50_us\":%.2f,\"report_p99_us\":%.2f,"
            + "\"reporter\":\"%s\"}%n",
        label, commits, pct(w, 50) / 1e6, pct(p, 50) / 1e6, pct(w, 90) / 1e6, pct(p, 90) / 1e6,
        pct(r, 50) / 1e3, pct(r, 99) / 1e3, s);
    System.out.flush();
    System.exit(0);
  }

  private static Table table(Catalog c, String label) {
    Namespace ns = Namespace.of(label);
    if (!((SupportsNamespaces) c).namespaceExists(ns)) {
      ((SupportsNamespaces) c).createNamespace(ns);
    }
    TableIdentifier id = TableIdentifier.of(ns, "t");
    return c.tableExists(id) ? c.loadTable(id) : c.createTable(id, SCHEMA);
  }

  private static long append(Table t, int n) {
    DataFile f =
        DataFiles.builder(PartitionSpec.unpartitioned())
            .withPath(t.location() + "/data/bench-" + n + ".parquet")
            .withFileSizeInBytes(1000)
            .withRecordCount(10)
            .withFormat("parquet")
            .build();
    long t0 = System.nanoTime();
    t.newFastAppend().appendFile(f).commit();
    return System.nanoTime() - t0;
  }

  private static double pct(long[] v, int p) {
    long[] s = v.clone();
    Arrays.sort(s);
    return s[Math.min(s.length - 1, (int) Math.ceil(p / 100.0 * s.length) - 1)];
  }
}
