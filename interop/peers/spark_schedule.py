"""The seeds' schedule, the Spark peer of the streaming-health benchmark
(interop/peers): one Spark session (local[2], Iceberg's Spark runtime, the
JdbcCatalog on the soak's SQLite file) that every N minutes runs, table by
table,

  CALL <catalog>.system.rewrite_data_files(table => ..., options => map('target-file-size-bytes', ...))
  CALL <catalog>.system.expire_snapshots(table => ..., older_than => now, retain_last => R)

rewrite_data_files with its defaults otherwise (bin-pack, min-input-files
5); expire_snapshots keeping the newest R snapshots (default 50: where
reactor's snapshot_count 100 trims to). The session stays up between runs
(a cron'd spark-submit would pay a JVM and a session per run instead).

Contract with bench/soak -maintainer-cmd: SOAK_CATALOG_DB, SOAK_CATALOG_NAME,
SOAK_WAREHOUSE, SOAK_TABLES, SOAK_TARGET_FILE_SIZE, SOAK_READY in the
environment; INTEROP_JARS (setup.sh) names the jars. Runs until SIGTERM.
SPARK_SCHEDULE_MINUTES (default 5) and SPARK_RETAIN_LAST set the schedule.
"""

import json
import os
import signal
import sys
import threading
import time


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] spark schedule: {msg}", flush=True)


def main():
    db = os.environ["SOAK_CATALOG_DB"]
    cat = os.environ["SOAK_CATALOG_NAME"]
    warehouse = os.environ["SOAK_WAREHOUSE"]
    tables = os.environ["SOAK_TABLES"].split(",")
    target = int(os.environ.get("SOAK_TARGET_FILE_SIZE", str(128 << 20)))
    every = float(os.environ.get("SPARK_SCHEDULE_MINUTES", "5")) * 60
    retain = int(os.environ.get("SPARK_RETAIN_LAST", "50"))
    jars = json.loads(os.environ["INTEROP_JARS"])

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    from pyspark.sql import SparkSession

    b = (
        SparkSession.builder.master("local[2]")
        .appName("soak-spark-schedule")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(f"spark.sql.catalog.{cat}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{cat}.type", "jdbc")
        .config(f"spark.sql.catalog.{cat}.uri", f"jdbc:sqlite:{db}")
        .config(f"spark.sql.catalog.{cat}.jdbc.schema-version", "V1")
        .config(f"spark.sql.catalog.{cat}.jdbc.busy_timeout", "30000")
        .config(f"spark.sql.catalog.{cat}.warehouse", warehouse)
        .config(f"spark.sql.catalog.{cat}.cache-enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    t0 = time.time()
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    log(f"Spark {spark.version} up in {time.time() - t0:.1f}s; every {every:.0f}s on {tables}, retain_last {retain}")
    ready = os.environ.get("SOAK_READY")
    if ready:
        with open(ready, "w") as f:
            f.write("ready\n")

    while not stop.wait(every):
        for t in tables:
            ident = f"{cat}.{t}"  # the procedures resolve a bare namespace as a catalog
            # Each call on its own: a rewrite that lost its commit race
            # (a result, logged) does not skip the expiry.
            for what, sql in (
                ("rewrite", f"CALL {cat}.system.rewrite_data_files(table => '{ident}', "
                            f"options => map('target-file-size-bytes', '{target}'))"),
                ("expire", f"CALL {cat}.system.expire_snapshots(table => '{ident}', "
                           f"older_than => current_timestamp(), retain_last => {retain})"),
            ):
                t1 = time.time()
                try:
                    r = spark.sql(sql).collect()[0].asDict()
                    log(f"{ident}: {what} {r} in {time.time() - t1:.1f}s")
                except Exception as ex:
                    log(f"{ident}: {what} failed after {time.time() - t1:.1f}s: {str(ex)[:500]}")
    log("stopping")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
