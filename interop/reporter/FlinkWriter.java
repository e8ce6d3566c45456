import io.icereactor.reporter.ReactorCommitReporter;
import io.icereactor.reporter.ReporterStats;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.source.RichSourceFunction;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

/**
 * The reporter scenario's Flink writer (interop/harness/reporter.py): Flink SQL on a local
 * MiniCluster into an Iceberg catalog (Iceberg's JdbcCatalog on the scenario's SQLite file) whose
 * metrics-reporter-impl is reactor's commit reporter, one checkpoint (so one Iceberg commit) a
 * second:
 *
 * <pre>FlinkWriter DB WAREHOUSE NATS_URL [reactor.key=value ...]</pre>
 *
 * then one command a line on standard input: {@code insert TABLE FIRST LAST BATCHES} runs a job
 * writing ids FIRST..LAST into lake.db.TABLE in BATCHES batches, the next released only when a
 * checkpoint has completed (so the commits do not depend on how fast the machine deploys the
 * job), waits for the reporter to have nothing pending (at most 60 s) and answers {@code done
 * SECONDS reporter offered=N published=N ...}; {@code quit} ends it.
 */
public class FlinkWriter {
  public static void main(String[] a) throws Exception {
    String db = a[0], warehouse = a[1], url = a[2];
    StringBuilder extra = new StringBuilder();
    for (int i = 3; i < a.length; i++) {
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
    t.executeSql("CREATE DATABASE IF NOT EXISTS lake.db");
    System.out.println("ready");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    int job = 0;
    for (String line; (line = in.readLine()) != null; ) {
      String[] c = line.trim().split("\\s+");
      if (c[0].equals("quit")) {
        break;
      }
      String table = c[1];
      long first = Long.parseLong(c[2]), last = Long.parseLong(c[3]);
      int batches = Integer.parseInt(c[4]);
      t.executeSql(
          "CREATE TABLE IF NOT EXISTS lake.db." + table
              + " (id BIGINT, category STRING, qty INT) PARTITIONED BY (category)"
              + " WITH ('format-version'='2')");
      String view = "gen" + (++job);
      DataStream<Long> ids = env.addSource(new Batches(first, last, batches), view);
      t.createTemporaryView(view, t.fromDataStream(ids).as("id"));
      long t0 = System.nanoTime();
      t.executeSql(
              "INSERT INTO lake.db." + table
                  + " SELECT id, CONCAT('c', CAST(MOD(id, 4) AS STRING)), CAST(MOD(id, 97) AS INT) FROM " + view)
          .await();
      double seconds = (System.nanoTime() - t0) / 1e9;
      long until = System.currentTimeMillis() + 60_000;
      ReporterStats s = ReactorCommitReporter.totals();
      while (s.pending > 0 && System.currentTimeMillis() < until) {
        Thread.sleep(100);
        s = ReactorCommitReporter.totals();
      }
      System.out.printf("done %.1f reporter %s%n", seconds, s);
      System.out.flush();
    }
    System.exit(0);
  }

  /**
   * Ids first..last in batches; the first goes out at once, each next one when a checkpoint
   * has completed since the last, so about one batch lands in each commit.
   */
  public static class Batches extends RichSourceFunction<Long> implements CheckpointListener {
    private static final long serialVersionUID = 1L;
    private final long first;
    private final long last;
    private final long perBatch;
    private volatile boolean running = true;
    private volatile long completed;

    Batches(long first, long last, int batches) {
      this.first = first;
      this.last = last;
      this.perBatch = Math.max(1, (last - first + batches) / batches);
    }

    @Override
    public void run(SourceContext<Long> ctx) throws Exception {
      long next = first;
      long seen = -1;
      while (running && next <= last) {
        if (completed != seen) {
          seen = completed;
          synchronized (ctx.getCheckpointLock()) {
            for (long i = 0; i < perBatch && next <= last; i++) {
              ctx.collect(next++);
            }
          }
        } else {
          Thread.sleep(20);
        }
      }
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
      completed = checkpointId;
    }

    @Override
    public void cancel() {
      running = false;
    }
  }
}
