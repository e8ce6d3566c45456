"""Scenario reporter: reactor maintains what Spark and Flink write, told
only by reactor's commit reporter (reporter/, an Iceberg MetricsReporter in
each engine's catalog). No bucket notifications (a local warehouse; reactor
runs with --notification-subject ''), no announcement by the harness: the
engines' own commits are the only events.

Phase 1, NATS up: a Spark SQL writer (INSERTs) and a Flink SQL writer
(datagen, a commit per 1 s checkpoint) write two tables at once; reactor,
started before the tables existed, must compact both; every writer commit
must be counted once by reactor (reactor_events_total{source="commit",
outcome="applied"} equals the writers' append snapshots and the reporters'
published counts); rows and checksum exact by Spark's read. The writer's
commit latency with and without the reporter in the same run: Spark
INSERTs into a table of a second catalog without the reporter, taking
turns, and interop/reporter/CommitLatency.java (Iceberg Java commit() on
the JdbcCatalog, with and without).

Phase 2, NATS stopped: the same writers go on (the Flink one with a 4-event
queue and a 3 s retry, so reports are dropped and counted); every
statement and job must succeed, nothing blocks, the reporters count what
they could not send; the latency figures again. NATS comes back (same
port, same store): reactor reconnects, rows and checksum still exact.
reactor catches up with the commits whose events were lost through the
polling safety net (thresholds key refresh_interval, 10 s here): each table
gets a compaction after its last writer commit. INTEROP_REPORTER_POLLING=0
leaves that assertion out.
"""

import json
import os
import re
import signal
import socket
import statistics
import subprocess
import threading
import time
import urllib.request

from .common import CATALOG, Env, Failure, check, compare_rows, log

POLLING_SWITCH = "INTEROP_REPORTER_POLLING"

THRESHOLDS = """\
defaults:
  target_file_size: 64MiB
  min_input_files: 2
  small_file_count: 4
  quiet_period: 0s
  cooldown: 3s
  conflict_cooldown: 3s
  snapshot_count: 100000
  snapshot_max_age: 3650d
  manifest_count: 100000
{polling}"""

SPARK_ROUNDS = 10         # INSERTs per phase into each Spark table (with and without the reporter)
ROWS_PER_INSERT = 100
FLINK_ROWS = (1200, 8)    # phase 1: ids 1..1200 in 8 batches (about one commit each)
FLINK_ROWS_DOWN = (600, 6)
LATENCY_COMMITS = 30
REPORTER_CLASS = "io.icereactor.reporter.ReactorCommitReporter"
ROW_SQL = "id, concat('c', CAST(id % 4 AS STRING)) AS category, CAST(id % 97 AS INT) AS qty"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NatsServer:
    """A nats-server process (JetStream on) that can be stopped and started
    again on the same port with the same store."""

    def __init__(self, work):
        self.port = free_port()
        self.store = os.path.join(work, "nats-store")
        self.logf = os.path.join(work, "nats-server.log")
        self.proc = None
        self.url = f"nats://127.0.0.1:{self.port}"

    def start(self):
        out = open(self.logf, "a")
        self.proc = subprocess.Popen([os.environ["INTEROP_NATS_SERVER"], "-a", "127.0.0.1", "-p", str(self.port),
                                      "-js", "-sd", self.store], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            check(self.proc.poll() is None, f"nats-server exited; see {self.logf}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise Failure(f"nats-server did not listen on {self.port} within 30s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


class Reactor:
    def __init__(self, env, nats_url):
        self.port = free_port()
        self.logf = os.path.join(env.work, "reactor.log")
        cmd = [env.tools["reactor"], "run", *env.catalog_args(), "--thresholds", env.thresholds_path,
               "--nats-url", nats_url, "--data-dir", os.path.join(env.work, "reactor-data"),
               "--notification-subject", "", "--http-addr", f"127.0.0.1:{self.port}", "--status-addr", ""]
        self.proc = subprocess.Popen(cmd, stdout=open(self.logf, "w"), stderr=subprocess.STDOUT)
        self.wait(lambda: self._get("/readyz")[0] == 200, 90, "reactor ready")

    def _get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except OSError as e:
            return getattr(e, "code", 0), ""

    def metrics(self):
        """{'name{labels}': value} of reactor's /metrics, labels sorted as Prometheus writes them."""
        status, text = self._get("/metrics")
        check(status == 200, f"reactor /metrics answered {status}")
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def events(self, outcome, source="commit"):
        return int(self.metrics().get(f'reactor_events_total{{outcome="{outcome}",source="{source}"}}', 0))

    def wait(self, pred, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            check(self.proc.poll() is None, f"reactor exited with {self.proc.returncode}; see {self.logf}")
            if pred():
                return
            time.sleep(0.5)
        raise Failure(f"not within {timeout}s: {what} (reactor's log: {self.logf})")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def parse_stats(text):
    """'offered=3 published=3 ...' -> dict."""
    return {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", text)}


def spark_reporter_stats(spark, settle=60):
    """The Spark driver's reporter counts (py4j), once nothing is pending
    (or after settle seconds)."""
    deadline = time.time() + settle
    while True:
        s = parse_stats(spark._jvm.io.icereactor.reporter.ReactorCommitReporter.totals().toString())
        if s["pending"] == 0 or time.time() > deadline:
            return s
        time.sleep(0.2)


class FlinkWriter:
    """interop/reporter/FlinkWriter.java: Flink SQL on a local MiniCluster, its
    catalog with the reporter (a 2-report queue and a 3 s retry: plenty with
    NATS up, and drops to count with NATS down), one process for both phases
    (the JVM's start costs the most), driven a command a line."""

    def __init__(self, env, nats_url):
        lib = os.environ["INTEROP_FLINK_LIB"]
        cp = ":".join([os.environ["INTEROP_REPORTER_CLASSES"], os.environ["INTEROP_REPORTER_JAR"], lib + "/*"])
        l4j = os.path.join(env.work, "log4j2-flink.properties")
        with open(l4j, "w") as f:
            f.write(f"""rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {os.path.join(env.work, "flink.log")}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %p %c{{1}}: %m%n
logger.reporter.name = io.icereactor
logger.reporter.level = info
logger.committer.name = org.apache.iceberg.flink.sink.IcebergFilesCommitter
logger.committer.level = info
""")
        opens = [f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
            "java.lang", "java.lang.reflect", "java.lang.invoke", "java.io", "java.net", "java.nio", "java.text",
            "java.time", "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "java.util.concurrent.locks",
            "sun.nio.ch")]
        cmd = ["java", *opens, f"-Dlog4j.configurationFile=file:{l4j}", "-cp", cp, "FlinkWriter",
               env.db, env.warehouse, nats_url, "reactor.queue-size=2", "reactor.retry-timeout-ms=3000"]
        self.out = os.path.join(env.work, "flink.out")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.out, "w"), text=True)
        self._expect("ready", 300)

    def _expect(self, word, timeout):
        # A line at a time; the process is ours and answers every command.
        import select
        deadline = time.time() + timeout
        while time.time() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 1)
            if r:
                line = self.proc.stdout.readline()
                if not line:
                    break
                if line.startswith(word):
                    return line.strip()
        raise Failure(f"the Flink writer did not say {word!r} within {timeout}s (exit {self.proc.poll()}); see {self.out}")

    def insert(self, table, first, last, batches, timeout=420):
        """Writes ids first..last; returns (job seconds, the reporter's counts)."""
        self.proc.stdin.write(f"insert {table} {first} {last} {batches}\n")
        self.proc.stdin.flush()
        line = self._expect("done", timeout)
        m = re.match(r"done (\S+) reporter (.*)$", line)
        return float(m.group(1)), parse_stats(m.group(2))

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def commit_latency(env, nats_url, label):
    """interop/reporter/CommitLatency.java: Iceberg Java commit() p50 with and
    without the reporter, one process, taking turns."""
    lib = os.environ["INTEROP_FLINK_LIB"]
    cp = ":".join([os.environ["INTEROP_REPORTER_CLASSES"], os.environ["INTEROP_REPORTER_JAR"], lib + "/*"])
    t0 = time.time()
    r = subprocess.run(["java", "-Dlog4j2.level=error", "-cp", cp, "CommitLatency",
                        os.path.join(env.work, "bench.db"), "file://" + os.path.join(env.work, "bench-warehouse"),
                        nats_url, str(LATENCY_COMMITS), label],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"CommitLatency failed: {r.stderr[-2000:]}")
    line = [x for x in r.stdout.splitlines() if x.startswith("{")][-1]
    res = json.loads(line)
    res["seconds"] = round(time.time() - t0, 1)
    log(f"  Iceberg commit() p50 ({label}): {res['with_p50_ms']:.1f} ms with the reporter, "
        f"{res['without_p50_ms']:.1f} ms without ({res['with_p50_ms'] / res['without_p50_ms']:.2f}x); "
        f"report() p50 {res['report_p50_us']:.2f} us, p99 {res['report_p99_us']:.2f} us; {res['reporter']}")
    return res


def spark_rounds(spark, start, rounds):
    """rounds INSERTs into lake.db.rep_spark (reporter) and plain.db.rep_spark
    (no reporter), taking turns; returns the two lists of statement seconds
    and the id range written."""
    with_s, without_s = [], []
    lo = start
    for i in range(rounds):
        hi = lo + ROWS_PER_INSERT
        order = [("lake", with_s), ("plain", without_s)]
        if i % 2:
            order.reverse()
        for cat, times in order:
            t0 = time.perf_counter()
            spark.sql(f"INSERT INTO {cat}.db.rep_spark SELECT {ROW_SQL} FROM range({lo}, {hi})")
            times.append(time.perf_counter() - t0)
        lo = hi
    return with_s, without_s, (start, lo)


def p50(xs):
    return statistics.median(xs) * 1000


def writer_commits(spark, table):
    return spark.sql(f"SELECT count(*) FROM {table}.snapshots WHERE operation = 'append'").collect()[0][0]


def replaced(spark, table):
    return spark.sql(f"SELECT count(*) FROM {table}.snapshots WHERE operation = 'replace'").collect()[0][0]


def expected_view(spark, name, ranges):
    sql = " UNION ALL ".join(f"SELECT {ROW_SQL} FROM range({lo}, {hi})" for lo, hi in ranges)
    spark.sql(sql).createOrReplaceTempView(name)
    return name


def checksum(spark, rel):
    r = spark.sql(f"SELECT count(*) AS n, coalesce(sum(CAST(xxhash64(id, category, qty) AS DECIMAL(38,0))), 0) AS h "
                  f"FROM {rel}").collect()[0]
    return [int(r.n), str(r.h)]


def check_table(spark, table, ranges, label):
    view = expected_view(spark, "expected_" + table.split(".")[-1], ranges)
    compare_rows(spark, table, view, label)
    got, want = checksum(spark, table), checksum(spark, view)
    check(got == want, f"{label}: {table} checksum {got}, expected {want}")
    log(f"  checksum OK ({label}): {table} {got}")


def scenario_reporter(work, tools, opts):
    t_start = time.time()
    env = Env(work, tools, "s12_reporter")
    polling = os.environ.get(POLLING_SWITCH, "1") != "0"
    env.write_thresholds(THRESHOLDS.format(polling="  refresh_interval: 10s\n" if polling else ""))
    res = {"polling_asserted": polling}
    nats = NatsServer(env.work)
    nats.start()
    reactor = spark = flink = None
    try:
        # reactor first, before any table exists: it learns of them from
        # their events alone (nothing to discover at start, no notifications).
        reactor = Reactor(env, nats.url)
        log(f"  reactor ready on {nats.url}; notifications off")
        flink = FlinkWriter(env, nats.url)  # its JVM starts while Spark's does
        jars = tools["jars"]  # the reporter's among them (tools_from_env)
        plain = "spark.sql.catalog.plain"
        spark = env.spark("reporter", {
            "spark.jars": ",".join(jars),
            f"spark.sql.catalog.{CATALOG}.metrics-reporter-impl": REPORTER_CLASS,
            f"spark.sql.catalog.{CATALOG}.reactor.nats.url": nats.url,
            f"spark.sql.catalog.{CATALOG}.reactor.engine-catalog": CATALOG,
            f"spark.sql.catalog.{CATALOG}.reactor.catalog-name": CATALOG,
            plain: "org.apache.iceberg.spark.SparkCatalog",
            f"{plain}.type": "jdbc",
            f"{plain}.uri": f"jdbc:sqlite:{env.db}",
            f"{plain}.jdbc.schema-version": "V1",
            f"{plain}.jdbc.busy_timeout": "30000",
            f"{plain}.warehouse": env.warehouse,
            f"{plain}.cache-enabled": "false",
        })
        ddl = "(id BIGINT, category STRING, qty INT) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2')"
        for cat in (CATALOG, "plain"):
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.db")
        spark.sql(f"CREATE TABLE {CATALOG}.db.rep_spark {ddl}")
        spark.sql(f"CREATE TABLE {CATALOG}.db.rep_flink {ddl}")
        spark.sql(f"CREATE TABLE plain.db.rep_spark {ddl}")

        # ---- phase 1: NATS up -------------------------------------------------
        t1 = time.time()
        n1, batches1 = FLINK_ROWS
        flink_job = {}
        flink_thread = threading.Thread(target=lambda: flink_job.update(
            r=flink.insert("rep_flink", 1, n1, batches1)), daemon=True)
        flink_thread.start()
        with_s, without_s, spark_range1 = spark_rounds(spark, 1, SPARK_ROUNDS)
        flink_thread.join(600)
        check("r" in flink_job, f"the Flink writer's job did not finish; see {flink.out}")
        flink_seconds, flink_stats = flink_job["r"]
        spark_stats = spark_reporter_stats(spark)
        spark_commits = writer_commits(spark, f"{CATALOG}.db.rep_spark")
        flink_commits = writer_commits(spark, f"{CATALOG}.db.rep_flink")
        log(f"  writers done in {time.time() - t1:.0f}s (the Flink job {flink_seconds:.0f}s): Spark {spark_commits} commits (reporter {spark_stats}), "
            f"Flink {flink_commits} commits (reporter {flink_stats})")
        check(spark_commits == SPARK_ROUNDS, f"Spark made {spark_commits} commits, want {SPARK_ROUNDS}")
        check(spark_stats["published"] == spark_commits and spark_stats["offered"] == spark_commits,
              f"Spark's reporter: {spark_stats}, want {spark_commits} offered and published")
        check(flink_stats["published"] == flink_commits and flink_stats["offered"] == flink_commits,
              f"Flink's reporter: {flink_stats}, want {flink_commits} offered and published")
        writes = spark_commits + flink_commits
        reactor.wait(lambda: reactor.events("applied") >= writes, 120,
                     f"reactor applied the {writes} writer commits' events")
        reactor.wait(lambda: replaced(spark, f"{CATALOG}.db.rep_spark") > 0 and replaced(spark, f"{CATALOG}.db.rep_flink") > 0,
                     180, "reactor compacted both tables from the reporter's events")
        time.sleep(2)  # a second copy of an event would arrive by now
        m = reactor.metrics()
        applied = reactor.events("applied")
        check(applied == writes, f"reactor counted {applied} commit events applied, the writers made {writes} commits")
        bad = {k: v for k, v in m.items() if k.startswith("reactor_events_total") and v and
               ('outcome="applied"' not in k or 'source="notification"' in k) and 'outcome="retry"' not in k}
        check(not bad, f"events other than applied commits: {bad}")
        jobs = {k: v for k, v in m.items() if k.startswith("reactor_jobs_total") and v}
        log(f"  reactor: {applied} commit events applied (each writer commit once), jobs {jobs}")
        for t in ("rep_spark", "rep_flink"):
            files = spark.sql(f"SELECT count(*) FROM {CATALOG}.db.{t}.files").collect()[0][0]
            added = spark.sql(f"SELECT coalesce(sum(CAST(summary['added-data-files'] AS INT)), 0) FROM {CATALOG}.db.{t}.snapshots "
                              "WHERE operation = 'append'").collect()[0][0]
            log(f"  {t}: {added} data files written, {files} live after reactor's compactions")
            check(files < added, f"{t}: {files} live data files of {added} written: nothing compacted")
        check_table(spark, f"{CATALOG}.db.rep_spark", [spark_range1], "after phase 1")
        check_table(spark, f"{CATALOG}.db.rep_flink", [(1, n1 + 1)], "after phase 1")
        res["phase1"] = {"spark_commits": spark_commits, "flink_commits": flink_commits, "applied": applied,
                         "spark_insert_p50_ms": {"with": p50(with_s), "without": p50(without_s)},
                         "spark_reporter": spark_stats, "flink_reporter": flink_stats, "jobs": jobs,
                         "seconds": round(time.time() - t1, 1)}
        log(f"  Spark INSERT p50: {p50(with_s):.0f} ms with the reporter, {p50(without_s):.0f} ms without "
            f"({p50(with_s) / p50(without_s):.2f}x, {SPARK_ROUNDS} each)")
        res["latency_up"] = commit_latency(env, nats.url, "up")

        # ---- phase 2: NATS stopped during the writes ----------------------------
        t2 = time.time()
        nats.stop()
        log("  nats-server stopped")
        n2, batches2 = FLINK_ROWS_DOWN
        first2 = n1 + 1
        flink_job = {}
        flink_thread = threading.Thread(target=lambda: flink_job.update(
            r=flink.insert("rep_flink", first2, n1 + n2, batches2)), daemon=True)
        flink_thread.start()
        with_d, without_d, spark_range2 = spark_rounds(spark, spark_range1[1], SPARK_ROUNDS)
        flink_thread.join(600)
        check("r" in flink_job, f"the Flink writer's job with NATS down did not finish; see {flink.out}")
        _, flink_total = flink_job["r"]
        flink_down = {k: flink_total[k] - flink_stats.get(k, 0) for k in flink_total}
        flink_down["pending"] = flink_total["pending"]
        check(flink_down["offered"] > 0 and flink_down["published"] == 0 and flink_down["dropped"] + flink_down["failed"] > 0
              and flink_down["offered"] == flink_down["dropped"] + flink_down["failed"] + flink_down["skipped"],
              f"Flink's reporter with NATS down: {flink_down}, want every report dropped or failed, and counted")
        spark_down = parse_stats(spark._jvm.io.icereactor.reporter.ReactorCommitReporter.totals().toString())
        check(spark_down["offered"] == 2 * SPARK_ROUNDS and spark_down["published"] == SPARK_ROUNDS,
              f"Spark's reporter with NATS down: {spark_down}")
        log(f"  writers unaffected with NATS down ({time.time() - t2:.0f}s): Spark {SPARK_ROUNDS} INSERTs, "
            f"reporter {spark_down}; Flink ids {first2}..{n1 + n2}, reporter {flink_down}")
        log(f"  Spark INSERT p50 with NATS down: {p50(with_d):.0f} ms with the reporter, {p50(without_d):.0f} ms without "
            f"({p50(with_d) / p50(without_d):.2f}x)")
        res["latency_down"] = commit_latency(env, nats.url, "down")
        nats.start()
        log("  nats-server started again (same port, same store)")
        spark_after = spark_reporter_stats(spark, settle=90)
        check(spark_after["pending"] == 0 and spark_after["offered"] == spark_after["published"] + spark_after["dropped"]
              + spark_after["failed"] + spark_after["skipped"], f"Spark's reporter after NATS came back: {spark_after}")
        log(f"  Spark's reporter after NATS came back: {spark_after}")
        res["phase2"] = {"spark_insert_p50_ms": {"with": p50(with_d), "without": p50(without_d)},
                         "flink_reporter": flink_down, "spark_reporter": spark_after,
                         "seconds": round(time.time() - t2, 1)}
        if polling:
            # Catching up needs the polling safety net: every writer commit of
            # both tables applied, and the new files compacted, within two intervals.
            for t in ("rep_spark", "rep_flink"):
                last = spark.sql(f"SELECT max(committed_at) FROM {CATALOG}.db.{t}.snapshots WHERE operation = 'append'").collect()[0][0]
                reactor.wait(lambda: spark.sql(f"SELECT count(*) FROM {CATALOG}.db.{t}.snapshots WHERE operation = 'replace' "
                                               f"AND committed_at > timestamp'{last}'").collect()[0][0] > 0,
                             60, f"reactor caught up with {t} by polling (a compaction after its last commit)")
            log("  reactor caught up by polling")
        else:
            log(f"  reactor's catch-up by polling NOT asserted ({POLLING_SWITCH}=0)")
        check_table(spark, f"{CATALOG}.db.rep_spark", [spark_range1, spark_range2], "after phase 2")
        check_table(spark, f"{CATALOG}.db.rep_flink", [(1, n1 + n2 + 1)], "after phase 2")
        res["seconds"] = round(time.time() - t_start, 1)
        return res
    finally:
        if flink is not None:
            flink.stop()
        if spark is not None:
            spark.stop()
        if reactor is not None:
            reactor.stop()
        nats.stop()
