"""The Spark side of the real-catalogs suite: one Spark 4.1 session with
Iceberg 1.12, with a catalog per real server (Iceberg's HiveCatalog,
JdbcCatalog on PostgreSQL and on MariaDB, HadoopCatalog on local disk),
driven by the Go scenarios through JSON lines.

    python server.py CONFIG.json      commands on stdin, answers and events on stdout

CONFIG.json: {"jars": "a.jar,b.jar", "log": "spark.log",
              "catalogs": {"NAME": {Spark catalog properties}, ...}}

Commands (one JSON object a line, each with an "id" echoed in its answer):
  {"cmd": "create", "catalog": C, "table": "db.t"}          create the namespace and table
  {"cmd": "write", "catalog": C, "table": T, "rate": 5, "seconds": 120, "rows": 20, "first_batch": 0}
        start a writer thread: one append of `rows` rows a commit, `rate` commits a
        second, for `seconds`; answers at once, then one {"event": "commit"} line a
        commit (its batch, whether it committed, its snapshot id, its time) and a
        {"event": "writer_done"} line at the end
  {"cmd": "verify", "catalog": C, "table": T}                Spark's read: per batch rows and checksum
  {"cmd": "bench", "catalog": C, "table": T, "n": 30}        n commits through Iceberg Java's API
  {"cmd": "quit"}

Rows of batch b: id = b * 10000 + k, category = "c" + (k % 8), payload =
"b<b>-k<k>"; a row's checksum is CRC-32 of "id|batch|category|payload",
the same text and function on both sides (Spark's crc32, Python's zlib).
"""

import json
import sys
import threading
import time
import traceback
import zlib

OUT = threading.Lock()


def emit(obj):
    with OUT:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def rows_of(batch, n):
    return [(batch * 10000 + k, batch, f"c{k % 8}", f"b{batch}-k{k}") for k in range(n)]


def checksum(rows):
    return sum(zlib.crc32(f"{r[0]}|{r[1]}|{r[2]}|{r[3]}".encode()) for r in rows)


class Server:
    def __init__(self, config):
        from pyspark.sql import SparkSession

        b = (SparkSession.builder.master("local[2]").appName("realcatalogs")
             .config("spark.jars", config["jars"])
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalogImplementation", "in-memory")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC"))
        if config.get("log4j"):
            b = b.config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{config['log4j']}")
        for name, props in config["catalogs"].items():
            b = b.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
            # Every statement reloads the table: reactor commits in between.
            b = b.config(f"spark.sql.catalog.{name}.cache-enabled", "false")
            for k, v in props.items():
                b = b.config(f"spark.sql.catalog.{name}.{k}", v)
        t0 = time.time()
        self.spark = b.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self.up_seconds = time.time() - t0
        from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType
        self.schema = StructType([StructField("id", LongType()), StructField("batch", IntegerType()),
                                  StructField("category", StringType()), StructField("payload", StringType())])
        self.writers = []

    def table(self, c):
        return self.spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(self.spark._jsparkSession, c)

    def create(self, cmd):
        name = f"{cmd['catalog']}.{cmd['table']}"
        ns = name.rsplit(".", 1)[0]
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {name} (id bigint, batch int, category string, payload string) "
                       f"USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2')")
        return {"table": name}

    def snapshot_of(self, name, batch):
        """The id of the snapshot that committed batch (its summary says so),
        found from the current one back: reactor may have committed since."""
        t = self.table(name)
        s = t.currentSnapshot()
        for _ in range(50):
            if s is None:
                return None
            if s.summary().get("reactor-suite.batch") == str(batch):
                return s.snapshotId()
            parent = s.parentId()
            s = t.snapshot(parent) if parent is not None else None
        return None

    def write(self, cmd):
        name = f"{cmd['catalog']}.{cmd['table']}"
        rate, seconds, n = float(cmd["rate"]), float(cmd["seconds"]), int(cmd["rows"])
        first = int(cmd.get("first_batch", 0))

        def run():
            start = time.time()
            ok = failed = 0
            batch = first
            while time.time() - start < seconds:
                due = start + (batch - first) / rate
                if due > time.time():
                    time.sleep(due - time.time())
                rows = rows_of(batch, n)
                t0 = time.time()
                ev = {"event": "commit", "catalog": cmd["catalog"], "table": cmd["table"], "batch": batch,
                      "rows": n, "checksum": checksum(rows)}
                try:
                    (self.spark.createDataFrame(rows, self.schema).writeTo(name)
                     .option("snapshot-property.reactor-suite.batch", str(batch)).append())
                    ev["ok"] = True
                    ev["ms"] = round((time.time() - t0) * 1000, 1)
                    ok += 1
                    try:
                        ev["snapshot_id"] = self.snapshot_of(name, batch)
                    except Exception as e:  # noqa: BLE001 - the commit stands; the event goes without an id
                        ev["lookup_error"] = str(e)[:300]
                except Exception as e:  # noqa: BLE001 - any failure: not committed, as the writer sees it
                    ev["ok"] = False
                    ev["error"] = str(e)[:1000]
                    ev["ms"] = round((time.time() - t0) * 1000, 1)
                    failed += 1
                emit(ev)
                batch += 1
            emit({"event": "writer_done", "id": cmd.get("id"), "catalog": cmd["catalog"], "table": cmd["table"],
                  "ok_batches": ok, "failed_batches": failed, "seconds": round(time.time() - start, 1)})

        th = threading.Thread(target=run, daemon=True)
        th.start()
        self.writers.append(th)
        return {"started": True}

    def verify(self, cmd):
        name = f"{cmd['catalog']}.{cmd['table']}"
        rows = self.spark.sql(
            f"SELECT batch, count(*) AS n, count(DISTINCT id) AS ids, "
            f"sum(cast(crc32(cast(concat_ws('|', id, batch, category, payload) AS binary)) AS bigint)) AS crc "
            f"FROM {name} GROUP BY batch").collect()
        batches = {str(r["batch"]): [r["n"], r["ids"], r["crc"]] for r in rows}
        files = self.spark.sql(f"SELECT count(*) FROM {name}.files").collect()[0][0]
        snapshots = self.spark.sql(f"SELECT count(*) FROM {name}.snapshots").collect()[0][0]
        return {"batches": batches, "rows": sum(v[0] for v in batches.values()), "data_files": files,
                "snapshots": snapshots}

    def bench(self, cmd):
        """Each sample: a catalog load of the table and one commit of a
        table property through Iceberg Java's API (a refresh, a new
        metadata file, the catalog's swap)."""
        name = f"{cmd['catalog']}.{cmd['table']}"
        ms = []
        for i in range(int(cmd["n"])):
            t0 = time.perf_counter()
            t = self.table(name)
            t.updateProperties().set("reactor-suite.bench", str(i)).commit()
            ms.append(round((time.perf_counter() - t0) * 1000, 2))
        # What a sample's four calls into the JVM (load, updateProperties,
        # set, commit) cost by themselves: a trivial call, timed.
        jvm = self.spark._jvm
        t0 = time.perf_counter()
        for _ in range(200):
            jvm.java.lang.System.nanoTime()
        call_ms = (time.perf_counter() - t0) * 1000 / 200
        return {"ms": ms, "py4j_call_ms": round(call_ms, 3)}


def main():
    with open(sys.argv[1]) as f:
        config = json.load(f)
    srv = Server(config)
    emit({"event": "ready", "seconds": round(srv.up_seconds, 1)})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        try:
            res = getattr(srv, cmd["cmd"])(cmd)
            res.update({"id": cmd.get("id"), "ok": True})
        except Exception as e:  # noqa: BLE001 - reported to the Go side
            res = {"id": cmd.get("id"), "ok": False, "error": f"{type(e).__name__}: {e}"[:2000],
                   "trace": traceback.format_exc()[-3000:]}
        emit(res)
    srv.spark.stop()


if __name__ == "__main__":
    main()
