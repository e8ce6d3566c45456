// The Flink peer of the streaming-health benchmark (interop/peers): Iceberg's
// Flink TableMaintenance (iceberg-flink-runtime-1.20 1.11.0) as a standalone
// job on a local MiniCluster, maintaining the soak's tables through
// Iceberg's JdbcCatalog on the soak's SQLite file, with a JDBC lock in the
// same database. Compiled by interop/peers against the classpath it fetches;
// nothing prebuilt is committed.
//
// Configured as Iceberg's docs (flink-maintenance.md, "Quick Start") show for
// a streaming table: ExpireSnapshots on commit count, RewriteDataFiles on
// data-file count with partial progress, plus DeleteOrphanFiles, one lock per
// table; the builder's default rate limit (60 s) unless FLINK_RATE_LIMIT_S
// says otherwise.
//
// Contract with bench/soak -maintainer-cmd (environment):
//   SOAK_CATALOG_DB        the SQLite file
//   SOAK_CATALOG_NAME      the catalog name its rows are keyed by
//   SOAK_WAREHOUSE         the warehouse location (file:///...)
//   SOAK_TABLES            namespace.table[,namespace.table...]
//   SOAK_TARGET_FILE_SIZE  bytes, the target of every maintainer
//   SOAK_READY             a file to create once the job runs
// It runs until SIGTERM, then cancels the job and exits.

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.maintenance.api.DeleteOrphanFiles;
import org.apache.iceberg.flink.maintenance.api.ExpireSnapshots;
import org.apache.iceberg.flink.maintenance.api.JdbcLockFactory;
import org.apache.iceberg.flink.maintenance.api.RewriteDataFiles;
import org.apache.iceberg.flink.maintenance.api.TableMaintenance;

public class FlinkMaintenance {
  static String env(String name, String dflt) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) {
      if (dflt == null) {
        throw new IllegalArgumentException(name + " is not set");
      }
      return dflt;
    }
    return v;
  }

  public static void main(String[] args) throws Exception {
    String db = env("SOAK_CATALOG_DB", null);
    String catalogName = env("SOAK_CATALOG_NAME", null);
    String warehouse = env("SOAK_WAREHOUSE", null);
    String[] tables = env("SOAK_TABLES", null).split(",");
    long target = Long.parseLong(env("SOAK_TARGET_FILE_SIZE", String.valueOf(128L << 20)));
    String ready = env("SOAK_READY", "");
    Duration rateLimit = Duration.ofSeconds(Long.parseLong(env("FLINK_RATE_LIMIT_S", "60")));
    int parallelism = Integer.parseInt(env("FLINK_PARALLELISM", "1"));

    String uri = "jdbc:sqlite:" + db;
    Map<String, String> props = new HashMap<>();
    props.put("uri", uri);
    props.put("warehouse", warehouse);
    props.put("jdbc.schema-version", "V1");
    // sqlite-jdbc reads busy_timeout from the connection properties: the
    // writer commits beside us at several commits a second.
    props.put("jdbc.busy_timeout", "30000");
    CatalogLoader catalog =
        CatalogLoader.custom(
            catalogName,
            props,
            new org.apache.hadoop.conf.Configuration(),
            "org.apache.iceberg.jdbc.JdbcCatalog");

    Configuration conf = new Configuration();
    conf.setString("rest.bind-address", "127.0.0.1");
    conf.setString("rest.address", "127.0.0.1");
    StreamExecutionEnvironment senv = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);

    Map<String, String> lockProps = new HashMap<>();
    lockProps.put("busy_timeout", "30000");
    lockProps.put("flink-maintenance.lock.jdbc.init-lock-tables", "true");
    for (String t : tables) {
      TableLoader loader = TableLoader.fromCatalog(catalog, TableIdentifier.parse(t));
      JdbcLockFactory lock = new JdbcLockFactory(uri, catalogName + "." + t, lockProps);
      TableMaintenance.forTable(senv, loader, lock)
          .uidSuffix("soak-" + t)
          .rateLimit(rateLimit)
          .lockCheckDelay(Duration.ofSeconds(10))
          .add(
              ExpireSnapshots.builder()
                  .scheduleOnCommitCount(10)
                  .maxSnapshotAge(Duration.ofMinutes(10))
                  .retainLast(5)
                  .deleteBatchSize(5))
          .add(
              RewriteDataFiles.builder()
                  .scheduleOnDataFileCount(10)
                  .targetFileSizeBytes(target)
                  .partialProgressEnabled(true)
                  .partialProgressMaxCommits(10))
          .add(DeleteOrphanFiles.builder().scheduleOnCommitCount(1000).minAge(Duration.ofDays(3)))
          .append();
    }

    JobClient job = senv.executeAsync("soak table maintenance");
    System.err.println("flink maintenance: job " + job.getJobID() + " on " + String.join(",", tables)
        + ", rate limit " + rateLimit + ", target " + target + " bytes");
    if (!ready.isEmpty()) {
      Files.writeString(Path.of(ready), job.getJobID().toString());
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    job.cancel().get();
                  } catch (Exception e) {
                    System.err.println("flink maintenance: cancel: " + e);
                  }
                  stopped.countDown();
                }));
    try {
      job.getJobExecutionResult().get();
    } catch (Exception e) {
      if (stopped.getCount() > 0) {
        System.err.println("flink maintenance: the job failed: " + e);
        e.printStackTrace();
        System.exit(1);
      }
    }
    stopped.await();
  }
}
