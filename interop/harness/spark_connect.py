"""Scenario spark_connect: reactor decides, Spark executes, through Spark
Connect (the Spark backend).

A Spark Connect server is started from the installed pyspark (the pip
package ships the server jar, jars/spark-connect_2.13-*.jar, and
bin/spark-submit, but not sbin/start-connect-server.sh: the server is
started the way that script does, spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer spark-internal),
with the Iceberg runtime and the shared SQLite catalog. `reactor run`
(against a NATS server that `jobtail` starts and whose job events it
prints) hears of the tables through commit events (published by jobtail,
as a streaming writer would), sends the compaction of the tables the spark
rules select to Spark, runs the others itself, and the job events carry
the counts, with backend spark or local. Then the server is killed
mid-job: reactor must report the job failed, the table must be
consistent, and a later attempt (once the server is back) must succeed.
"""

import json
import os
import signal
import socket
import subprocess
import threading
import time

from . import model as M
from .common import CATALOG, Env, Failure, check, compare_rows, log, save_expected

# manifest_count is raised above the tables' 40 commits: with the streaming
# default (20) the metadata-first manifest rewrite runs locally before each
# compaction, and the scenario watches the compactions' backends and order.
THRESHOLDS = """\
defaults:
  manifest_count: 1000
  target_file_size: 64MiB
  min_input_files: 2
  small_file_count: 2
  quiet_period: 0s
  cooldown: 2s
  conflict_cooldown: 2s
spark:
  endpoint: sc://127.0.0.1:{port}
  catalog: {catalog}
  timeout: {timeout}
  interrupt_grace: 2m
  connect_timeout: 30s
  rules:
    - match: "db.spark_*"
      kinds: [compact]
      min_input_files: 20
"""

CATEGORIES = ["a", "b c"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectServer:
    """A Spark Connect server from the installed pyspark, in its own
    process group (killed whole)."""

    def __init__(self, env, port):
        self.env, self.port, self.proc, self.starts = env, port, None, 0

    def start(self):
        import pyspark
        home = os.path.dirname(pyspark.__file__)
        conf = self.env.spark_conf("connect", {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
        })
        master = conf.pop("spark.master")
        jars = conf.pop("spark.jars")
        args = [os.path.join(home, "bin", "spark-submit"), "--master", master, "--jars", jars,
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "reactor-interop-connect"]
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        args.append("spark-internal")
        self.starts += 1
        out = open(os.path.join(self.env.work, f"connect-server-{self.starts}.out"), "w")
        t0 = time.time()
        self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "SPARK_HOME": home})
        deadline = t0 + 180
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Failure(f"the Spark Connect server exited with {self.proc.returncode}; see {out.name}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    log(f"  Spark Connect server up on 127.0.0.1:{self.port} in {time.time() - t0:.1f}s")
                    return time.time() - t0
            except OSError:
                time.sleep(0.5)
        raise Failure(f"the Spark Connect server did not listen on {self.port} within 180s; see {out.name}")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class JobEvents:
    """jobtail: an embedded NATS server, and every job event reactor
    publishes on it."""

    def __init__(self, env):
        store = os.path.join(env.work, "nats")
        os.makedirs(store, exist_ok=True)
        self.proc = subprocess.Popen([env.tools["jobtail"], store], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline().split()
        check(len(first) == 2 and first[0] == "nats", f"jobtail said {first}")
        self.url = first[1]
        self.events, self.published, self.lock = [], set(), threading.Lock()
        self.log = open(os.path.join(env.work, "job-events.jsonl"), "w")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("published "):
                with self.lock:
                    self.published.add(line.split()[1])
                continue
            self.log.write(line)
            self.log.flush()
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append(ev)

    def wait(self, pred, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                for ev in self.events:
                    if pred(ev):
                        return ev
            time.sleep(0.2)
        raise Failure(f"no job event {what} within {timeout}s (events: {self.log.name})")

    def announce(self, spark, name):
        """Publishes the commit event of db.<name>'s current snapshot (a
        JetStream publish, retried until reactor's commit stream exists:
        reactor is connected then, and every job event of the table
        reaches jobtail)."""
        snap = spark.sql(f"SELECT snapshot_id FROM {CATALOG}.db.{name}.snapshots "
                         "ORDER BY committed_at DESC LIMIT 1").collect()[0][0]
        subject = f"iceberg.commits.db.{name}"
        body = json.dumps({"catalog": CATALOG, "namespace": "db", "table": name, "snapshot_id": snap})
        self.proc.stdin.write(f"{subject} {body}\n")
        self.proc.stdin.flush()
        deadline = time.time() + 150
        while time.time() < deadline:
            with self.lock:
                if subject in self.published:
                    self.published.discard(subject)
                    return
            time.sleep(0.1)
        raise Failure(f"jobtail could not publish the commit event of db.{name}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def start_reactor(env, nats_url, n):
    data = os.path.join(env.work, f"reactor-data-{n}")
    cmd = [env.tools["reactor"], "run", *env.catalog_args(), "--thresholds", env.thresholds_path,
           "--nats-url", nats_url, "--data-dir", data, "--http-addr", "", "--status-addr", ""]
    logf = open(os.path.join(env.work, f"reactor-run-{n}.log"), "w")
    return subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)


def stop_reactor(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def terminal(table, kind="compact", job_id=None, phase=None):
    def pred(ev):
        return (ev.get("table") == table and ev.get("kind") == kind and ev.get("phase") in ("succeeded", "failed")
                and (job_id is None or ev.get("job_id") == job_id) and (phase is None or ev.get("phase") == phase))
    return pred


def data_files(spark, table):
    return spark.sql(f"SELECT count(*) FROM {table}.files WHERE content = 0").collect()[0][0]


def make_table(spark, m, name, batches):
    table = f"{CATALOG}.db.{name}"
    spark.sql(f"CREATE TABLE {table} ({M.DDL_COLUMNS}) USING iceberg PARTITIONED BY (category) "
              "TBLPROPERTIES ('format-version'='2')")
    for b in range(batches):
        rows = m.batch(f"{name}{b}", 10, 20, categories=CATEGORIES)
        spark.createDataFrame(rows, M.SCHEMA).coalesce(1).createOrReplaceTempView("batch_rows")
        spark.sql(f"INSERT INTO {table} SELECT * FROM batch_rows")
        m.insert(rows)
    return table


def compact_pair(env, spark, events, suffix, seed):
    """Two copies of one table (same rows, same files): the spark rule
    selects db.spark_<suffix>, db.local_<suffix> stays local. 15 INSERTs of
    two partitions: 30 small files each, over the rule's 20. Both are
    announced to reactor; each compaction must end on its backend with
    counts that match the table, rows exact. Returns the durations."""
    from .scenarios import check_metadata

    models, tables = {}, {}
    for name in (f"spark_{suffix}", f"local_{suffix}"):
        models[name] = M.Model(seed=seed)
        tables[name] = make_table(spark, models[name], name, 15)
    files_before = {n: data_files(spark, t) for n, t in tables.items()}
    log(f"  tables written: {files_before} data files")
    for name in tables:
        events.announce(spark, name)
    evs = {}
    for name in tables:
        evs[name] = events.wait(terminal(f"db.{name}"), 300, f"ending a compaction of db.{name}")
    for name, ev in evs.items():
        want = "spark" if name.startswith("spark") else "local"
        log(f"  db.{name}: {ev['phase']} on {ev.get('backend')} in {ev.get('duration_seconds', 0):.2f}s, counts {ev.get('counts')}")
        check(ev["phase"] == "succeeded" and ev.get("outcome") == "succeeded",
              f"db.{name}: the compaction ended {ev['phase']}/{ev.get('outcome')}: {ev.get('error')}")
        check(ev.get("backend") == want, f"db.{name}: ran on {ev.get('backend')}, want {want}")
        started = events.wait(lambda e, j=ev["job_id"]: e.get("job_id") == j and e.get("phase") == "started", 5,
                              f"started for {ev['job_id']}")
        check(started.get("backend") == want, f"db.{name}: started event says backend {started.get('backend')}")
        exp = save_expected(spark, models[name].expected(), M.SCHEMA, os.path.join(env.work, "expected", name), f"exp_{name}")
        compare_rows(spark, tables[name], exp, f"after the {want} compaction of db.{name}")
        check_metadata(spark, tables[name], f"db.{name} after the {want} compaction")
        after = data_files(spark, tables[name])
        c = ev.get("counts", {})
        check(c.get("rewritten_data_files_count") == files_before[name],
              f"db.{name}: rewritten_data_files_count {c.get('rewritten_data_files_count')}, the table had {files_before[name]} data files")
        check(c.get("added_data_files_count") == after,
              f"db.{name}: added_data_files_count {c.get('added_data_files_count')}, the table now has {after} data files")
        check(c.get("rewritten_bytes_count", 0) > 0, f"db.{name}: rewritten_bytes_count {c.get('rewritten_bytes_count')}")
    return {"spark": round(evs[f"spark_{suffix}"]["duration_seconds"], 2),
            "local": round(evs[f"local_{suffix}"]["duration_seconds"], 2)}


def wait_reloads(env, n):
    """Waits until reactor logged its n-th thresholds reload."""
    path = os.path.join(env.work, "reactor-run-1.log")
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(path) as f:
            if f.read().count('"thresholds reloaded"') >= n:
                return
        time.sleep(0.5)
    raise Failure(f"reactor did not reload the thresholds file {n} times within 60s ({path})")


def timeout_phase(env, spark, events, port):
    from .scenarios import check_metadata

    env.write_thresholds(THRESHOLDS.format(port=port, catalog=CATALOG, timeout="500ms"))
    wait_reloads(env, 1)
    m = M.Model(seed=10)
    table = make_table(spark, m, "spark_d", 40)
    exp = save_expected(spark, m.expected(), M.SCHEMA, os.path.join(env.work, "expected", "spark_d"), "exp_spark_d")
    events.announce(spark, "spark_d")
    ev = events.wait(terminal("db.spark_d"), 300, "ending the compaction of db.spark_d")
    log(f"  job over its 500ms timeout: {ev['phase']}/{ev.get('outcome')} on {ev.get('backend')} after "
        f"{ev.get('duration_seconds', 0):.1f}s: {ev.get('error')}")
    check(ev["phase"] == "failed" and "interrupted (timeout)" in (ev.get("error") or ""),
          f"the job over its timeout ended {ev['phase']}: {ev.get('error')}")
    with open(os.path.join(env.work, "reactor-run-1.log")) as f:
        lines = [line for line in f if ev["job_id"] in line]
    check(any('"Spark ended the interrupted statement"' in line for line in lines),
          "reactor's log does not say Spark ended the interrupted statement")
    with events.lock:
        before_end = events.events[:events.events.index(ev)]
    others = [e for e in before_end if e.get("table") == "db.spark_d" and e.get("phase") == "started" and e.get("job_id") != ev["job_id"]]
    check(not others, f"another job started on db.spark_d before the interrupted one ended: {others}")
    compare_rows(spark, table, exp, "after the interrupted Spark job")
    check_metadata(spark, table, "db.spark_d after the interrupted Spark job")
    env.write_thresholds(THRESHOLDS.format(port=port, catalog=CATALOG, timeout="5m"))
    wait_reloads(env, 2)
    ok = events.wait(terminal("db.spark_d", phase="succeeded"), 300, "a later successful compaction of db.spark_d")
    check(ok.get("backend") == "spark", f"the later attempt ran on {ok.get('backend')}")
    compare_rows(spark, table, exp, "after the later attempt on db.spark_d")
    return {"error": ev.get("error"), "seconds": ev.get("duration_seconds")}


def scenario_spark_connect(work, tools, opts):
    from .scenarios import check_metadata

    env = Env(work, tools, "s7_spark_connect")
    port = free_port()
    env.write_thresholds(THRESHOLDS.format(port=port, catalog=CATALOG, timeout="5m"))
    spark = env.spark("interop-s7")
    server, events, reactor = ConnectServer(env, port), None, None
    result = {}
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
        # Two copies of one table (same rows, same files): the spark rule
        # selects db.spark_a, db.local_a stays local. 15 INSERTs of two
        # partitions: 30 small files each, over the rule's 20.
        result["server_start_s"] = round(server.start(), 1)
        events = JobEvents(env)
        reactor = start_reactor(env, events.url, 1)
        # The same compaction twice on each backend: the first Spark job
        # on a fresh server (class loading, JIT), then a warm one.
        result["seconds"] = compact_pair(env, spark, events, "a", seed=7)
        result["seconds_warm"] = compact_pair(env, spark, events, "c", seed=9)

        # The kill: a larger table, the server killed while Spark runs it.
        m = M.Model(seed=8)
        kill_table = make_table(spark, m, "spark_b", 40)
        exp = save_expected(spark, m.expected(), M.SCHEMA, os.path.join(env.work, "expected", "spark_b"), "exp_spark_b")
        n_before = data_files(spark, kill_table)
        events.announce(spark, "spark_b")
        started = events.wait(lambda e: e.get("table") == "db.spark_b" and e.get("kind") == "compact" and e.get("phase") == "started", 300,
                              "started for db.spark_b")
        check(started.get("backend") == "spark", f"db.spark_b started on {started.get('backend')}")
        time.sleep(1.5)
        server.kill()
        killed_at = time.time()
        log(f"  killed the Spark Connect server 1.5s into job {started['job_id']}")
        result["restart_s"] = round(server.start(), 1)
        ev = events.wait(terminal("db.spark_b", job_id=started["job_id"]), 300, "ending the killed job")
        log(f"  killed job: {ev['phase']}/{ev.get('outcome')} on {ev.get('backend')} "
            f"{time.time() - killed_at:.1f}s after the kill: {ev.get('error')}")
        check(ev["phase"] == "failed", f"the job whose server was killed ended {ev['phase']} (it finished before the kill?): {ev}")
        check(ev.get("backend") == "spark", f"the killed job's failed event says backend {ev.get('backend')}")
        compare_rows(spark, kill_table, exp, "after the killed Spark job")
        check_metadata(spark, kill_table, "db.spark_b after the killed Spark job")
        ok = events.wait(terminal("db.spark_b", phase="succeeded"), 300, "a later successful compaction of db.spark_b")
        log(f"  later attempt {ok['job_id']}: {ok.get('outcome')} on {ok.get('backend')}, counts {ok.get('counts')}")
        check(ok.get("backend") == "spark" and ok.get("outcome") == "succeeded", f"the later attempt: {ok}")
        compare_rows(spark, kill_table, exp, "after the later Spark attempt")
        check_metadata(spark, kill_table, "db.spark_b after the later attempt")
        n_after = data_files(spark, kill_table)
        check(n_after < n_before, f"db.spark_b still has {n_after} data files (had {n_before})")
        result["kill"] = {"failed_error": ev.get("error"), "later": ok.get("counts"), "files": [n_before, n_after]}

        # The timeout: a job still running at spark.timeout is interrupted
        # through Spark Connect (by its operation tag), and its table is
        # given to no other job before Spark ended the statement.
        result["timeout"] = timeout_phase(env, spark, events, port)
        stop_reactor(reactor)
        reactor = None
        log(f"  figure: the same compaction (30 files, 2 partitions) took {result['seconds']['local']}s in reactor, "
            f"{result['seconds']['spark']}s through Spark Connect on a fresh server, "
            f"{result['seconds_warm']['local']}s and {result['seconds_warm']['spark']}s on a warm one")
        return result
    finally:
        if reactor is not None:
            stop_reactor(reactor)
        if events is not None:
            events.stop()
        server.kill()
        spark.stop()
