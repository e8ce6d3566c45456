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
import subprocess
import time

from . import model as M
from .common import CATALOG, Env, Failure, check, compare_rows, log, run_py
from .scenarios import THRESHOLDS, check_metadata, counts, expect, insert_rows, replay, spark_writes
from .tablestate import checksum, delete_kinds, lineage, lineage_problems, v3_delete_problems

V3_MOR_PROPS = ("'format-version'='3', 'write.delete.mode'='merge-on-read', "
                "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'")
V2_MOR_PROPS = V3_MOR_PROPS.replace("'format-version'='3'", "'format-version'='2'")
V3_APPEND_BATCHES = 10


def reactor_step(spark, env, table, ident, exp, cmd, *args, problems, label=None, ok=("succeeded", "noop")):
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
    problems, res = [], {}
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
        spark.sql(f"CREATE TABLE {table} ({M.DDL_COLUMNS}) USING iceberg PARTITIONED BY (category) "
                  f"TBLPROPERTIES ({V3_MOR_PROPS})")
        m = M.Model(seed=9)
        # 12 batches: DELETE after batch 4, UPDATE after 7, MERGE INTO after 10.
        spark_writes(spark, table, m, batches=12, label="v")
        exp = expect(spark, env, m, "expected_s9")
        compare_rows(spark, table, exp, "Spark's v3 writes")
        kinds = delete_kinds(spark, table)
        log(f"  Spark wrote {kinds}")
        check(kinds["dv"] > 0 and kinds["position"] == 0, f"Spark did not write deletion vectors: {kinds}")
        check(not v3_delete_problems(spark, table, "Spark's writes"), "Spark's own v3 table breaks the v3 rules")
        first = lineage(spark, table)
        check(not lineage_problems({}, first, "Spark's writes"), "Spark's rows lack lineage")
        res["before"] = {"deletes": kinds, "checksum": checksum(spark, table),
                         "metadata": check_metadata(spark, table, "Spark's v3 writes")}

        for cmd in ("rewrite-deletes", "compact", "rewrite-manifests"):
            r = reactor_step(spark, env, table, ident, exp, cmd, problems=problems)
            res[cmd] = {"outcome": r.get("outcome"), **counts(r)}
        check(checksum(spark, table) == res["before"]["checksum"], "checksum changed by reactor's jobs")
        time.sleep(1.1)
        r = reactor_step(spark, env, table, ident, exp, "expire", "--older-than", "1s", "--retain-last", "1",
                         problems=problems)
        res["expire"] = {"outcome": r.get("outcome"), **counts(r)}

        # A second Spark writer (inserts, and DELETEs of earlier rows: more
        # deletion vectors) while reactor compacts and merges deletes.
        spark_writes(spark, table, m, batches=3, label="w", with_row_level=True)
        before = lineage(spark, table)
        state = os.path.join(env.work, "appender.jsonl")
        appender = run_py(["appender", env.work, table, state, str(m.next_id), str(V3_APPEND_BATCHES)],
                          stdout=open(os.path.join(env.work, "appender.out"), "w"), stderr=subprocess.STDOUT,
                          start_new_session=True)
        runs, rounds = {}, 0
        while appender.poll() is None:
            cmd = "compact" if rounds % 2 == 0 else "rewrite-deletes"
            r = env.reactor(cmd, ident, ok_codes=(0, 1))
            runs[r.get("outcome", "failed")] = runs.get(r.get("outcome", "failed"), 0) + 1
            log(f"  reactor {cmd} beside the Spark writer: {r.get('outcome')} {counts(r)} {r.get('error', '')[:200]}")
            rounds += 1
            time.sleep(0.3)
        check(appender.returncode == 0, f"appender exited {appender.returncode} (see {env.work}/appender.out)")
        applied = replay(m, [json.loads(line) for line in open(state)])
        log(f"  Spark writer: {applied}; reactor beside it: {runs}")
        res["concurrent"] = {"reactor": runs, "spark": applied}
        if not runs.get("succeeded"):
            problems.append(f"no reactor job committed beside the Spark writer: {runs}")
        exp = expect(spark, env, m, "expected_s9_concurrent")
        r = reactor_step(spark, env, table, ident, exp, "compact", problems=problems, label="final reactor compact")
        problems += lineage_problems(before, lineage(spark, table), "beside the second Spark writer")

        # Spark writes on reactor's table and reads its own rows.
        spark_writes(spark, table, m, batches=2, label="z")
        exp = expect(spark, env, m, "expected_s9_final")
        compare_rows(spark, table, exp, "Spark writes after reactor's jobs")
        check_metadata(spark, table, "at the end")
        res["problems"] = problems
        if problems:
            raise Failure(f"{len(problems)} v3 problems (rows exact throughout):\n  " + "\n  ".join(problems))
        return res
    finally:
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
        for b in range(6):
            rows = m.batch(f"u{b}", 25, 40)
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
        res["upgraded"] = {"deletes": kinds, "metadata": check_metadata(spark, table, "upgraded")}
        check(kinds["position"] > 0, f"the DELETE in v3 left no Parquet position deletes to rewrite: {kinds}")

        r = reactor_step(spark, env, table, ident, exp, "rewrite-deletes", problems=problems, ok=("succeeded",))
        res["rewrite_deletes"] = {"outcome": r.get("outcome"), **counts(r), "deletes": delete_kinds(spark, table)}
        check(checksum(spark, table) == before_sum, "checksum changed by reactor rewrite-deletes")
        r = reactor_step(spark, env, table, ident, exp, "compact", problems=problems)
        res["compact"] = {"outcome": r.get("outcome"), **counts(r), "deletes": delete_kinds(spark, table)}

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
