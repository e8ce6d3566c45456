"""Format v3 scenarios: a table Spark writes with deletion vectors
(merge-on-read DELETE, UPDATE and MERGE INTO) that reactor compacts and
maintains beside a second Spark writer, and a v2 table Spark upgrades to
v3 whose Parquet position deletes reactor is to rewrite into deletion
vectors. Rows are hard checks (EXCEPT ALL against the model, checksum);
the v3 rules (deletion vectors only, one per data file, none dangling)
and row lineage (_row_id, _last_updated_sequence_number kept through a
rewrite) are collected as problems and reported together at the end, so
one run shows everything reactor gets wrong."""

import json
import os
import signal
import subprocess
import time

from . import model as M
from .common import CATALOG, Env, Failure, check, compare_rows, log, run_py
from .scenarios import THRESHOLDS, check_metadata, counts, expect, insert_rows, replay
from .tablestate import checksum, delete_kinds, lineage, lineage_problems, v3_delete_problems

V3_MOR_PROPS = ("'format-version'='3', 'write.delete.mode'='merge-on-read', "
                "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'")
V2_MOR_PROPS = V3_MOR_PROPS.replace("'format-version'='3'", "'format-version'='2'")
V3_APPEND_BATCHES = 8
APPENDER_FIRST_ID = 1_000_000


def v3_writes(spark, table, m, label):
    """Spark's merge-on-read statements on a v3 table: INSERT batches, a
    DELETE, an UPDATE and a MERGE INTO (each writes deletion vectors, one
    per data file it touches, merged with that file's previous one)."""
    for b in range(5):
        rows = m.batch(f"{label}{b}", 20, 40)
        insert_rows(spark, table, rows)
        m.insert(rows)
    spark.sql(f"DELETE FROM {table} WHERE id % 7 = 2")
    m.delete_where(lambda r: r[0] % 7 == 2)
    spark.sql(f"UPDATE {table} SET qty = qty + 1000, note = concat(note, '-u') WHERE id % 5 = 1 AND category <> 'a'")
    m.update_where(lambda r: r[0] % 5 == 1 and r[1] != "a", lambda r: (r[0], r[1], r[2], r[3] + 1000, r[4] + "-u"))
    src = m.merge_source(f"{label}m")
    spark.createDataFrame(src, M.MERGE_SCHEMA).createOrReplaceTempView("merge_src")
    spark.sql(f"""MERGE INTO {table} t USING merge_src s ON t.id = s.id
        WHEN MATCHED AND s.op = 'd' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.qty = s.qty, t.note = s.note
        WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT (id, category, ts, qty, note)
          VALUES (s.id, s.category, s.ts, s.qty, s.note)""")
    m.merge(src)


def converged_problems(env, ident, label):
    """Right after a compaction every partition holds one file with every
    delete applied: `reactor plan` must schedule no compaction and no
    delete rewrite (issue 18's convergence)."""
    plan = env.reactor("plan", ident)
    jobs = [j for j in plan.get("jobs") or [] if j["kind"] in ("compact", "rewrite_position_deletes")]
    log(f"  reactor plan {label}: {[(j['kind'], j.get('partitions')) for j in plan.get('jobs') or []]}")
    if not jobs:
        return []
    why = [f"{x.get('partition')} {x.get('threshold')}={x.get('measured')}>={x.get('limit')} {x.get('note', '')}".strip()
           for j in jobs for x in j.get("reasons") or []]
    return [f"{label}: reactor plan schedules {[j['kind'] for j in jobs]} again (not converged): {why[:2]}"]


def reactor_step(spark, env, table, ident, exp, cmd, *args, problems, label=None, ok=("succeeded", "noop"),
                 metadata=False):
    """Runs one reactor command; the rows must stay exact (a hard check);
    an outcome outside `ok` is a problem."""
    label = label or f"reactor {cmd}"
    before = lineage(spark, table)
    r = env.reactor(cmd, ident, *args, ok_codes=(0, 1))
    log(f"{label}: {r.get('outcome')} {counts(r)} {r.get('error', '')[:300]}")
    if r.get("outcome") not in ok:
        problems.append(f"{label}: outcome {r.get('outcome')}: {r.get('error', '')[:400]}")
    compare_rows(spark, table, exp, f"after {label}")
    problems += v3_delete_problems(spark, table, f"after {label}")
    problems += lineage_problems(before, lineage(spark, table), f"after {label}")
    if metadata:
        check_metadata(spark, table, f"after {label}")
    return r


def scenario_v3_dvs(work, tools, opts):
    """A v3 table Spark writes with deletion vectors; reactor compacts and
    maintains it; a second Spark writer commits beside reactor's jobs."""
    env = Env(work, tools, "s9_v3_dvs")
    env.write_thresholds(THRESHOLDS)
    spark = env.spark("interop-s9")
    table = f"{CATALOG}.db.v3"
    ident = "db.v3"
    problems, res, appender = [], {}, None
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
        spark.sql(f"CREATE TABLE {table} ({M.DDL_COLUMNS}) USING iceberg PARTITIONED BY (category) "
                  f"TBLPROPERTIES ({V3_MOR_PROPS})")
        m = M.Model(seed=9)
        # The second writer's process starts now (its session comes up while
        # this one writes) and writes once `go` exists; its ids start far
        # past this session's.
        go, state = os.path.join(env.work, "appender.go"), os.path.join(env.work, "appender.jsonl")
        appender = run_py(["appender", env.work, table, state, str(APPENDER_FIRST_ID), str(V3_APPEND_BATCHES), "4", go],
                          stdout=open(os.path.join(env.work, "appender.out"), "w"), stderr=subprocess.STDOUT,
                          start_new_session=True)
        v3_writes(spark, table, m, "v")
        exp = expect(spark, env, m, "expected_s9")
        compare_rows(spark, table, exp, "Spark's v3 writes")
        kinds = delete_kinds(spark, table)
        log(f"  Spark wrote {kinds}")
        check(kinds["dv"] > 0 and kinds["position"] == 0, f"Spark did not write deletion vectors: {kinds}")
        check(not v3_delete_problems(spark, table, "Spark's writes"), "Spark's own v3 table breaks the v3 rules")
        first = lineage(spark, table)
        check(not lineage_problems({}, first, "Spark's writes"), "Spark's rows lack lineage")
        res["before"] = {"deletes": kinds, "checksum": checksum(spark, table)}

        # The second rewrite-deletes is what `reactor run` schedules after a
        # compaction that left deletion vectors of the files it removed.
        for n, cmd in enumerate(("rewrite-deletes", "compact", "rewrite-deletes", "rewrite-manifests")):
            r = reactor_step(spark, env, table, ident, exp, cmd, problems=problems, metadata=cmd == "compact",
                             label=f"reactor {cmd}" + (" after compact" if n == 2 else ""))
            res[f"{n}-{cmd}"] = {"outcome": r.get("outcome"), **counts(r)}
        check(checksum(spark, table) == res["before"]["checksum"], "checksum changed by reactor's jobs")
        time.sleep(1.1)
        r = reactor_step(spark, env, table, ident, exp, "expire", "--older-than", "1s", "--retain-last", "1",
                         problems=problems, metadata=True)
        res["expire"] = {"outcome": r.get("outcome"), **counts(r)}

        # A second Spark writer (inserts, and DELETEs of earlier rows: more
        # deletion vectors) while reactor compacts and merges deletes. Its
        # process started with the scenario and waits for the go file.
        before = lineage(spark, table)
        with open(go, "w"):
            pass
        # reactor's jobs start once the writer committed its first statement
        # (its Spark session takes 15-30 s to come up).
        while appender.poll() is None and not (os.path.exists(state) and os.path.getsize(state) > 0):
            time.sleep(0.5)
        runs, rounds = {}, 0
        while appender.poll() is None:
            cmd = "compact" if rounds % 2 == 0 else "rewrite-deletes"
            r = env.reactor(cmd, ident, ok_codes=(0, 1))
            runs[r.get("outcome", "failed")] = runs.get(r.get("outcome", "failed"), 0) + 1
            if r.get("outcome") != "noop":
                log(f"  reactor {cmd} beside the Spark writer: {r.get('outcome')} {counts(r)} {r.get('error', '')[:200]}")
            rounds += 1
            time.sleep(0.5)
        check(appender.returncode == 0, f"appender exited {appender.returncode} (see {env.work}/appender.out)")
        ops = [json.loads(line) for line in open(state)]
        applied = replay(m, ops)
        log(f"  Spark writer: {applied}; reactor beside it: {runs}")
        res["concurrent"] = {"reactor": runs, "spark": applied}
        if not runs.get("succeeded"):
            problems.append(f"no reactor job committed beside the Spark writer: {runs}")
        check(any(op["op"] == "delete" and op["ok"] for op in ops),
              "none of the Spark writer's DELETEs committed beside reactor's jobs (4 attempts each)")
        exp = expect(spark, env, m, "expected_s9_concurrent")
        r = reactor_step(spark, env, table, ident, exp, "compact", problems=problems, label="final reactor compact")
        problems += lineage_problems(before, lineage(spark, table), "beside the second Spark writer")
        problems += converged_problems(env, ident, "after the final compaction")

        # Spark writes on reactor's table (an INSERT and a DELETE: new
        # deletion vectors on reactor's files) and reads its own rows.
        rows = m.batch("z", 20, 30)
        insert_rows(spark, table, rows)
        m.insert(rows)
        spark.sql(f"DELETE FROM {table} WHERE id % 7 = 3")
        m.delete_where(lambda r: r[0] % 7 == 3)
        exp = expect(spark, env, m, "expected_s9_final")
        compare_rows(spark, table, exp, "Spark writes after reactor's jobs")
        check_metadata(spark, table, "at the end")
        res["problems"] = problems
        if problems:
            raise Failure(f"{len(problems)} v3 problems (rows exact throughout):\n  " + "\n  ".join(problems))
        return res
    finally:
        if appender and appender.poll() is None:  # the scenario failed before the writer finished
            os.killpg(appender.pid, signal.SIGKILL)
            appender.wait()
        spark.stop()


def scenario_v2_to_v3(work, tools, opts):
    """A v2 table with Parquet position deletes, upgraded to v3 by Spark:
    reactor rewrites its position deletes into deletion vectors."""
    env = Env(work, tools, "s10_v2_to_v3")
    env.write_thresholds(THRESHOLDS)
    spark = env.spark("interop-s10")
    table = f"{CATALOG}.db.upgraded"
    ident = "db.upgraded"
    problems, res = [], {}
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
        spark.sql(f"CREATE TABLE {table} ({M.DDL_COLUMNS}) USING iceberg PARTITIONED BY (category) "
                  f"TBLPROPERTIES ({V2_MOR_PROPS})")
        m = M.Model(seed=10)
        for b in range(4):
            rows = m.batch(f"u{b}", 30, 50)
            insert_rows(spark, table, rows)
            m.insert(rows)
        for k in (1, 2, 3):
            spark.sql(f"DELETE FROM {table} WHERE id % 11 = {k}")
            m.delete_where(lambda r, k=k: r[0] % 11 == k)
        spark.sql(f"UPDATE {table} SET qty = qty + 1000 WHERE id % 13 = 0")
        m.update_where(lambda r: r[0] % 13 == 0, lambda r: (r[0], r[1], r[2], r[3] + 1000, r[4]))
        exp = expect(spark, env, m, "expected_s10")
        compare_rows(spark, table, exp, "Spark's v2 writes")
        kinds = delete_kinds(spark, table)
        check(kinds["position"] > 0 and kinds["dv"] == 0, f"no v2 position deletes: {kinds}")

        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('format-version'='3')")
        compare_rows(spark, table, exp, "after the upgrade to v3")
        # One more DELETE in v3: Spark writes deletion vectors (and folds
        # the position deletes of the files it touches into them).
        spark.sql(f"DELETE FROM {table} WHERE id % 17 = 5")
        m.delete_where(lambda r: r[0] % 17 == 5)
        exp = expect(spark, env, m, "expected_s10_v3")
        compare_rows(spark, table, exp, "after a DELETE in v3")
        kinds = delete_kinds(spark, table)
        before_sum = checksum(spark, table)
        log(f"  upgraded table: {kinds}, checksum {before_sum}")
        res["upgraded"] = {"deletes": kinds}
        check(kinds["position"] > 0, f"the DELETE in v3 left no Parquet position deletes to rewrite: {kinds}")

        r = reactor_step(spark, env, table, ident, exp, "rewrite-deletes", problems=problems, ok=("succeeded",))
        res["rewrite_deletes"] = {"outcome": r.get("outcome"), **counts(r), "deletes": delete_kinds(spark, table)}
        check(checksum(spark, table) == before_sum, "checksum changed by reactor rewrite-deletes")
        r = reactor_step(spark, env, table, ident, exp, "compact", problems=problems, metadata=True)
        res["compact"] = {"outcome": r.get("outcome"), **counts(r), "deletes": delete_kinds(spark, table)}
        r = reactor_step(spark, env, table, ident, exp, "rewrite-deletes", problems=problems,
                         label="reactor rewrite-deletes after compact")
        res["rewrite_deletes_after_compact"] = {"outcome": r.get("outcome"), **counts(r)}
        problems += converged_problems(env, ident, "after reactor compact and rewrite-deletes")

        # Spark writes on and reads its rows; its own procedure is the
        # reference for what is left.
        spark.sql(f"DELETE FROM {table} WHERE id % 19 = 7")
        m.delete_where(lambda r: r[0] % 19 == 7)
        exp = expect(spark, env, m, "expected_s10_final")
        out = spark.sql(f"CALL {CATALOG}.system.rewrite_position_delete_files(table => '{ident}', "
                        f"options => map('rewrite-all', 'true'))").collect()
        log(f"  spark rewrite_position_delete_files: {[tuple(x) for x in out]}; then {delete_kinds(spark, table)}")
        compare_rows(spark, table, exp, "Spark's DELETE and rewrite_position_delete_files after reactor")
        check_metadata(spark, table, "at the end")
        res["problems"] = problems
        if problems:
            raise Failure(f"{len(problems)} v3 problems (rows exact throughout):\n  " + "\n  ".join(problems))
        return res
    finally:
        spark.stop()
