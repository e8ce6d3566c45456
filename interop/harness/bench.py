"""Peer benchmark: reactor against Spark's procedures on identical copies of
one table (same files: the work directory is restored from a pristine copy
before every run, paths included).

  compaction  reactor compact               vs rewrite_data_files (as sparkcall renders reactor's job)
  expiry      reactor expire                vs expire_snapshots (rendered)
  orphans     reactor orphans (dry run)     vs remove_orphan_files(dry_run => true) (rendered)

reactor is measured as the whole CLI process (/usr/bin/time: wall, max
RSS). Spark (local[2], default driver memory, the harness's session
settings) is measured in a fresh Python process per run: the procedure
call alone, the whole process (JVM start and session included), and the
driver JVM's peak RSS (VmHWM) plus the Python driver's.
"""

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

from .common import CATALOG, Env, Failure, backdate, check, local_path, log, tools_from_env

DAY = 86400

BENCH_THRESHOLDS = """\
defaults:
  target_file_size: 128MiB
  min_input_files: 2
  small_file_count: 2
  min_reader_margin: 0s
  quiet_period: 0s
  orphan_margin: 72h
"""


def sh_copy(src, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    subprocess.run(["cp", "-a", src, dst], check=True)


def checkpoint(db):
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def tree_stats(root):
    n = size = 0
    for d, _, fs in os.walk(root):
        for f in fs:
            n += 1
            size += os.path.getsize(os.path.join(d, f))
    return n, size


class Bench:
    def __init__(self, work, tools, commits, rows_per_commit, repeats):
        self.base = os.path.join(work, "bench")
        self.live = "live"
        self.tools = tools
        self.commits, self.rows, self.repeats = commits, rows_per_commit, repeats
        self.env = Env(self.base, tools, self.live)
        self.env.write_thresholds(BENCH_THRESHOLDS)
        self.ident = "bench.events"
        self.table = f"{CATALOG}.bench.events"
        self.states = {}

    def live_dir(self):
        return os.path.join(self.base, self.live)

    def save_state(self, name):
        checkpoint(self.env.db)
        dst = os.path.join(self.base, "state-" + name)
        sh_copy(self.live_dir(), dst)
        self.states[name] = dst

    def restore(self, name):
        sh_copy(self.states[name], self.live_dir())

    # ---- building the inputs (Spark writes, as a streaming writer would) ----
    def build(self):
        spark = self.env.spark("bench-build")
        try:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.bench")
            spark.sql(f"""CREATE TABLE {self.table} (id BIGINT NOT NULL, category STRING, ts TIMESTAMP,
                qty INT, note STRING) USING iceberg PARTITIONED BY (category)
                TBLPROPERTIES ('format-version'='2', 'write.distribution-mode'='none')""")
            t0 = time.time()
            for c in range(self.commits):
                lo = c * self.rows
                (spark.range(lo, lo + self.rows, 1, 1)
                 .selectExpr("id", "element_at(array('a', 'b', 'c', 'd'), CAST(id % 4 + 1 AS INT)) AS category",
                             "TIMESTAMP '2026-11-27 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id % 86400) AS ts",
                             "CAST(id % 1000 AS INT) AS qty", "concat('note-', CAST(id AS STRING)) AS note")
                 .sortWithinPartitions("category")
                 .writeTo(self.table).append())
            log(f"bench: Spark wrote {self.commits} commits of {self.rows} rows in {time.time() - t0:.0f}s")
            return self.describe(spark, "appended (compaction input)")
        finally:
            spark.stop()

    def describe(self, spark, label):
        files = spark.sql(f"SELECT count(*), sum(file_size_in_bytes), sum(record_count) FROM {self.table}.files").collect()[0]
        snaps = spark.sql(f"SELECT count(*) FROM {self.table}.snapshots").collect()[0][0]
        manifests = spark.sql(f"SELECT count(*) FROM {self.table}.manifests").collect()[0][0]
        n, size = tree_stats(self.live_dir())
        d = {"data_files": files[0], "data_bytes": files[1], "rows": files[2], "snapshots": snaps,
             "manifests": manifests, "files_on_disk": n, "bytes_on_disk": size}
        log(f"bench: table {label}: {d}")
        return d

    # ---- measuring ------------------------------------------------------------
    def time_reactor(self, command, *args):
        cmd = ["/usr/bin/time", "-f", "%e %M", self.tools["reactor"], command, *self.env.catalog_args(),
               "--thresholds", self.env.thresholds_path, "--json", *args, self.ident]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        last = p.stderr.strip().splitlines()[-1]
        wall, rss_kb = last.split()
        if p.returncode != 0:
            raise Failure(f"reactor {command} exited {p.returncode}: {p.stdout[-500:]} {p.stderr[-1500:]}")
        out = json.loads(p.stdout)
        return {"wall_s": float(wall), "rss_mb": int(rss_kb) / 1024, "counts": out.get("counts"),
                "orphans": [local_path(o["location"]) for o in out.get("orphans") or []]}

    def time_spark(self, sql):
        t0 = time.time()
        p = subprocess.run([sys.executable, "-m", "harness", "spark-op", self.base, self.live, self.table, sql],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        total = time.time() - t0
        if p.returncode != 0:
            raise Failure(f"spark-op failed: {p.stderr[-2000:]}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        res["process_s"] = total
        return res

    def render(self, kind, *args):
        r = self.env.render(kind, self.ident, *args)
        check(not r.get("error") and len(r.get("statements") or []) == 1, f"render {kind}: {r}")
        return r["statements"][0]["sql"]

    def measure(self, name, state, reactor_args, render_args, kind):
        runs = {"reactor": [], "spark": []}
        for i in range(self.repeats):
            self.restore(state)
            r = self.time_reactor(*reactor_args)
            runs["reactor"].append(r)
            log(f"bench {name} #{i + 1} reactor: {r['wall_s']:.2f}s, {r['rss_mb']:.0f} MB, {r['counts']}")
            self.restore(state)
            sql = self.render(kind, *render_args)
            s = self.time_spark(sql)
            runs["spark"].append(s)
            log(f"bench {name} #{i + 1} spark: call {s['op_s']:.2f}s (after a {s['warmup_s']:.1f}s warm-up), process {s['process_s']:.1f}s, "
                f"JVM peak {s['jvm_hwm_mb']:.0f} MB + Python {s['python_rss_mb']:.0f} MB, {s['result'][:3]}")
        self.restore(state)
        return {"sql": sql, "runs": runs, "summary": summarize(runs)}


def summarize(runs):
    med = statistics.median
    r, s = runs["reactor"], runs["spark"]
    out = {
        "reactor_wall_s": med(x["wall_s"] for x in r),
        "reactor_rss_mb": med(x["rss_mb"] for x in r),
        "spark_call_s": med(x["op_s"] for x in s),
        "spark_process_s": med(x["process_s"] for x in s),
        "spark_jvm_mb": med(x["jvm_hwm_mb"] for x in s),
        "spark_total_mb": med(x["jvm_hwm_mb"] + x["python_rss_mb"] for x in s),
        "reactor_wall_range": [min(x["wall_s"] for x in r), max(x["wall_s"] for x in r)],
        "spark_call_range": [min(x["op_s"] for x in s), max(x["op_s"] for x in s)],
    }
    out["ratio_call_vs_reactor"] = out["spark_call_s"] / out["reactor_wall_s"]
    out["ratio_process_vs_reactor"] = out["spark_process_s"] / out["reactor_wall_s"]
    out["ratio_jvm_mem_vs_reactor"] = out["spark_jvm_mb"] / out["reactor_rss_mb"]
    return out


def bench_main(argv):
    work = argv[0]
    opts = {"commits": 200, "rows": 5000, "repeats": 3, "report": None}
    it = iter(argv[1:])
    for a in it:
        key = a.lstrip("-")
        opts[key] = next(it) if key == "report" else int(next(it))
    b = Bench(work, tools_from_env(), opts["commits"], opts["rows"], opts["repeats"])
    t0 = time.time()
    results = {"params": {k: v for k, v in opts.items() if k != "report"}}
    results["input_appended"] = b.build()
    b.save_state("appended")

    # Compaction on the appended table.
    results["compaction"] = b.measure("compaction", "appended", ("compact",), (), "compact")

    # Expiry and orphans start from the compacted table (reactor's own
    # compaction, so both tools see the same files), where expiry has data
    # files to delete.
    b.restore("appended")
    b.time_reactor("compact")
    spark = b.env.spark("bench-describe")
    try:
        results["input_compacted"] = b.describe(spark, "compacted (expiry and orphan input)")
    finally:
        spark.stop()
    time.sleep(1.1)
    b.save_state("compacted")
    results["expiry"] = b.measure("expiry", "compacted", ("expire", "--older-than", "1s", "--retain-last", "1"),
                                  ("--older-than", "1s", "--retain-last", "1"), "expire_snapshots")

    # Orphans: the compacted table (history kept: the listing is checked
    # against every snapshot) plus leftover files of failed writes, all
    # backdated past the 72 h margin. Both tools run as dry runs.
    b.restore("compacted")
    data = os.path.join(b.live_dir(), "warehouse", "bench", "events", "data")
    sample = next(os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs if f.endswith(".parquet"))
    n_orphans = 500
    for i in range(n_orphans):
        cat = "abcd"[i % 4]
        shutil.copyfile(sample, os.path.join(data, f"category={cat}", f"leftover-{i:05d}.parquet"))
    backdate(b.live_dir(), 4 * DAY)
    b.save_state("orphans")
    results["orphans"] = b.measure("orphans", "orphans", ("orphans", "--older-than", "72h"),
                                   ("--older-than", "72h"), "remove_orphans")
    b.restore("orphans")
    n, size = tree_stats(b.live_dir())
    results["input_orphans"] = {"files_on_disk": n, "bytes_on_disk": size, "injected_orphans": n_orphans}
    # Do the two tools find the same orphans?
    r = results["orphans"]["runs"]["reactor"][-1]["orphans"]
    s = results["orphans"]["runs"]["spark"][-1]["orphans"]
    visible = lambda xs: {x for x in xs if not os.path.basename(x).startswith((".", "_"))}  # noqa: E731
    results["orphans"]["agree_ignoring_hidden"] = visible(r) == visible(s)
    results["orphans"]["reactor_hidden"] = len(set(r) - visible(r))
    results["seconds"] = time.time() - t0
    log("bench summary:")
    for k in ("compaction", "expiry", "orphans"):
        log(f"  {k}: {json.dumps(results[k]['summary'])}")
    if opts["report"]:
        with open(opts["report"], "w") as f:
            json.dump(results, f, indent=2, default=str)
    return 0


def spark_op_main(argv):
    """One Spark procedure call in a fresh process: prints JSON timings."""
    t_start = time.time()
    base, name, table, sql = argv
    env = Env(base, tools_from_env(), name, init=False)
    spark = env.spark("bench-op")
    t_session = time.time()
    # Warm-up, read-only: loads the table through the catalog, plans a scan
    # and reads every data file, so the timed call does not pay for the
    # first use of the catalog, Iceberg's planning and the Parquet reader.
    spark.sql(f"SELECT count(*), sum(qty) FROM {table}").collect()
    spark.sql(f"SELECT count(*) FROM {table}.all_files").collect()
    t_warm = time.time()
    rows = spark.sql(sql).collect()
    t_op = time.time() - t_warm
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    hwm_kb = 0
    with open(f"/proc/{jvm_pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm_kb = int(line.split()[1])
    import resource
    py_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    orphans = [local_path(r[0]) for r in rows] if rows and len(rows[0]) == 1 and isinstance(rows[0][0], str) else []
    result = [list(r) for r in rows[:3]] if not orphans else [f"{len(orphans)} orphan_file_location rows"]
    spark.stop()
    print(json.dumps({"session_s": t_session - t_start, "warmup_s": t_warm - t_session, "op_s": t_op, "jvm_hwm_mb": hwm_kb / 1024,
                      "python_rss_mb": py_kb / 1024, "result": result, "orphans": orphans}, default=str))
    return 0
