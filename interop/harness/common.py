"""Shared parts of the interop harness: the catalog both sides share, a
Spark session on it, reactor's one-shot CLI, the sparkcall renderer, and
row comparison by content (EXCEPT ALL in both directions).

The shared catalog is one SQLite file: Spark reaches it through Iceberg's
JdbcCatalog (sqlite-jdbc), reactor through iceberg-go's SQL catalog. Both
store the same two tables (iceberg_tables with iceberg_type, the "V1"
schema, and iceberg_namespace_properties) keyed by the catalog name, so the
Spark catalog and reactor's --catalog-name must be the same name: CATALOG.
"""

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import time

CATALOG = "lake"


class Failure(Exception):
    """A scenario check failed."""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class Env:
    """One scenario's world: a work directory holding the SQLite catalog and
    the warehouse, and the tools that act on it."""

    def __init__(self, work, tools, name, init=True):
        self.work = os.path.join(work, name)
        self.tools = tools
        self.name = name
        os.makedirs(self.work, exist_ok=True)
        self.db = os.path.join(self.work, "catalog.db")
        self.warehouse_dir = os.path.join(self.work, "warehouse")
        os.makedirs(self.warehouse_dir, exist_ok=True)
        self.warehouse = "file://" + self.warehouse_dir
        if init and not os.path.exists(self.db):
            # WAL, set once here, persists in the file: both drivers use it.
            con = sqlite3.connect(self.db)
            con.execute("PRAGMA journal_mode=WAL")
            con.close()
        self.thresholds_path = os.path.join(self.work, "thresholds.yaml")
        if init:
            self.write_thresholds("")

    # ---- thresholds -------------------------------------------------------
    def write_thresholds(self, text):
        with open(self.thresholds_path, "w") as f:
            f.write(text)

    # ---- Spark --------------------------------------------------------------
    def spark_conf(self, app, extra=None):
        conf = {
            "spark.master": "local[2]",
            "spark.app.name": app,
            "spark.jars": ",".join(self.tools["jars"]),
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{CATALOG}.type": "jdbc",
            f"spark.sql.catalog.{CATALOG}.uri": f"jdbc:sqlite:{self.db}",
            f"spark.sql.catalog.{CATALOG}.jdbc.schema-version": "V1",
            f"spark.sql.catalog.{CATALOG}.jdbc.busy_timeout": "30000",
            f"spark.sql.catalog.{CATALOG}.warehouse": self.warehouse,
            # Every statement reloads the table: reactor commits in between.
            f"spark.sql.catalog.{CATALOG}.cache-enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": "4",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            # Spark's and Iceberg's logs go to <work>/spark-<app>.log, not the console.
            "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{self.log4j_config(app)}",
        }
        conf.update(extra or {})
        return conf

    def log4j_config(self, app):
        path = os.path.join(self.work, f"log4j2-{app}.properties")
        with open(path, "w") as f:
            f.write(f"""rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {os.path.join(self.work, f"spark-{app}.log")}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %p %c{{1}}: %m%n
""")
        return path

    def spark(self, app, extra=None):
        from pyspark.sql import SparkSession

        b = SparkSession.builder
        for k, v in self.spark_conf(app, extra).items():
            b = b.config(k, v)
        t0 = time.time()
        s = b.getOrCreate()
        s.sparkContext.setLogLevel("ERROR")
        log(f"Spark {s.version} session up in {time.time() - t0:.1f}s")
        return s

    # ---- reactor ------------------------------------------------------------
    def catalog_args(self):
        return [
            "--catalog-type", "sql",
            "--catalog-uri", f"file://{self.db}?_pragma=busy_timeout(30000)&_txlock=immediate",
            "--catalog-name", CATALOG,
            "--warehouse", self.warehouse,
            "--catalog-prop", "sql.driver=sqliteshim",
            "--catalog-prop", "sql.dialect=sqlite",
        ]

    def reactor(self, command, table, *args, ok_codes=(0,)):
        """Runs a reactor one-shot command with --json; returns the parsed
        result. Its stderr log goes to <work>/reactor.log."""
        cmd = [self.tools["reactor"], command, *self.catalog_args(),
               "--thresholds", self.thresholds_path, "--json", *args, table]
        t0 = time.time()
        with open(os.path.join(self.work, "reactor.log"), "a") as logf:
            logf.write(f"\n$ {shlex.join(cmd)}\n")
            logf.flush()
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=logf, text=True)
        dt = time.time() - t0
        if p.returncode not in ok_codes:
            raise Failure(f"reactor {command} {table} exited {p.returncode}: {p.stdout[-2000:]} "
                          f"(log: {os.path.join(self.work, 'reactor.log')})")
        out = json.loads(p.stdout) if p.stdout.strip() else {}
        out["_seconds"] = dt
        out["_code"] = p.returncode
        return out

    def render(self, kind, table, *args):
        """Renders reactor's job of this kind as Spark procedure calls."""
        cmd = [self.tools["render"], "--catalog-uri", f"file://{self.db}?_pragma=busy_timeout(30000)",
               "--warehouse", self.warehouse, "--catalog-name", CATALOG,
               "--thresholds", self.thresholds_path, "--kind", kind, *args, table]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode not in (0, 3):
            raise Failure(f"sparkcall-render {kind} {table} exited {p.returncode}: {p.stderr[-2000:]}")
        return json.loads(p.stdout)


# ---- rows -------------------------------------------------------------------
def compare_rows(spark, table, expected_view, label):
    """Compares the table's rows with the expected rows by content, both
    ways, with EXCEPT ALL (duplicates count); raises Failure with samples of
    the differences."""
    extra = spark.sql(f"SELECT * FROM {table} EXCEPT ALL SELECT * FROM {expected_view}")
    missing = spark.sql(f"SELECT * FROM {expected_view} EXCEPT ALL SELECT * FROM {table}")
    n_extra, n_missing = extra.count(), missing.count()
    n = spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0]
    if n_extra or n_missing:
        def sample(df):
            return "\n    ".join(str(r) for r in df.limit(10).collect())
        raise Failure(f"{label}: {table} differs from the expected rows: {n_extra} rows not expected "
                      f"(table EXCEPT ALL expected), {n_missing} expected rows missing (expected EXCEPT ALL table)"
                      f"\n  not expected:\n    {sample(extra)}\n  missing:\n    {sample(missing)}")
    log(f"  rows OK ({label}): {n} rows, EXCEPT ALL empty both ways")
    return n


def save_expected(spark, rows, schema, path, view):
    """Saves the expected rows (a copy outside Iceberg, plain Parquet) and
    registers them as a temporary view."""
    df = spark.createDataFrame(rows, schema)
    df.coalesce(1).write.mode("overwrite").parquet(path)
    spark.read.parquet(path).createOrReplaceTempView(view)
    return view


def local_path(location):
    """file:/x, file:///x and /x all name /x."""
    if location.startswith("file:"):
        location = location[len("file:"):]
        while location.startswith("//"):
            location = location[1:]
    return location


def files_on_disk(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add(os.path.join(d, f))
    return out


def backdate(root, seconds):
    """Sets every file's mtime under root `seconds` into the past, so an
    orphan margin of days applies to files written a moment ago."""
    t = time.time() - seconds
    for p in files_on_disk(root):
        os.utime(p, (t, t))


def tools_from_env():
    """The tools interop/run set up: reactor, sparkcall-render, the jars.

    The commit reporter's jar is among the jars of every Spark session:
    PySpark starts one JVM for the whole run, with the spark.jars of the
    first session on its classpath, and the reporter scenario's catalog
    loads the reporter's class there (later sessions' spark.jars do not
    reach the driver's class loader). Unconfigured, the class is inert."""
    jars = json.loads(os.environ["INTEROP_JARS"])
    reporter = os.environ.get("INTEROP_REPORTER_JAR")
    if reporter and reporter not in jars:
        jars.append(reporter)
    return {"reactor": os.environ.get("INTEROP_REACTOR"), "render": os.environ.get("INTEROP_RENDER"),
            "jobtail": os.environ.get("INTEROP_JOBTAIL"), "eqdelete": os.environ.get("INTEROP_EQDELETE"),
            "jars": jars}


def run_py(args, **kw):
    """Runs this harness's entry point in a new Python process."""
    return subprocess.Popen([sys.executable, "-m", "harness", *args], **kw)
