import io.icereactor.reporter.ReactorCommitReporter;
import io.icereactor.reporter.ReporterStats;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

/**
 * The reporter scenario's Flink writer (interop/harness/reporter.py): Flink SQL on a local
 * MiniCluster, an Iceberg catalog (Iceberg's JdbcCatalog on the scenario's SQLite file) with
 * reactor's commit reporter set as its metrics-reporter-impl, a datagen source of ids FIRST..LAST
 * at RATE rows/s and a checkpoint (an Iceberg commit) every second, into lake.db.TABLE:
 *
 * <pre>FlinkWriter DB WAREHOUSE NATS_URL TABLE FIRST LAST RATE [reactor.key=value ...]</pre>
 *
 * When the job has finished it waits (up to 60 s) for the reporter to have nothing pending and
 * prints its counts as one line: {@code reporter offered=N published=N dropped=N ...}.
 */
public class FlinkWriter {
  public static void main(String[] a) throws Exception {
    String db = a[0], warehouse = a[1], url = a[2], table = a[3];
    long first = Long.parseLong(a[4]), last = Long.parseLong(a[5]), rate = Long.parseLong(a[6]);
    StringBuilder extra = new StringBuilder();
    for (int i = 7; i < a.length; i++) {
      String[] kv = a[i].split("=", 2);
      extra.append(", '").append(kv[0]).append("'='").append(kv[1]).append("'");
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    env.enableCheckpointing(1000);
    StreamTableEnvironment t = StreamTableEnvironment.create(env);
    t.executeSql(
        "CREATE CATALOG lake WITH ("
            + "'type'='iceberg', "
            + "'catalog-impl'='org.apache.iceberg.jdbc.JdbcCatalog', "
            + "'uri'='jdbc:sqlite:" + db + "', "
            + "'jdbc.schema-version'='V1', "
            + "'jdbc.busy_timeout'='30000', "
            + "'warehouse'='" + warehouse + "', "
            + "'metrics-reporter-impl'='io.icereactor.reporter.ReactorCommitReporter', "
            + "'reactor.nats.url'='" + url + "', "
            + "'reactor.engine-catalog'='lake', "
            + "'reactor.catalog-name'='lake'"
            + extra
            + ")");
    t.executeSql(
        "CREATE TEMPORARY TABLE gen (id BIGINT) WITH ("
            + "'connector'='datagen', 'rows-per-second'='" + rate + "', "
            + "'fields.id.kind'='sequence', 'fields.id.start'='" + first + "', 'fields.id.end'='" + last + "')");
    long t0 = System.nanoTime();
    t.executeSql(
            "INSERT INTO lake.db." + table
                + " SELECT id, CONCAT('c', CAST(MOD(id, 4) AS STRING)), CAST(MOD(id, 97) AS INT) FROM gen")
        .await();
    System.out.printf("flink job finished in %.1f s%n", (System.nanoTime() - t0) / 1e9);
    long until = System.currentTimeMillis() + 60_000;
    ReporterStats s = ReactorCommitReporter.totals();
    while (s.pending > 0 && System.currentTimeMillis() < until) {
      Thread.sleep(100);
      s = ReactorCommitReporter.totals();
    }
    System.out.println("reporter " + s);
    System.out.flush();
    System.exit(0);
  }
}
