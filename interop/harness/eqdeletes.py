"""The equality-delete scenario: a format-v2 table Spark writes, with
equality deletes committed through iceberg-go (interop/eqdelete; Spark
never writes them, Flink upsert sinks and Kafka Connect CDC do), converted
by reactor into position deletes, then Spark's own
rewrite_position_delete_files on reactor's output."""

import json
import os
import subprocess

from . import model as M
from .common import CATALOG, Env, Failure, check, compare_rows, log
from .scenarios import MOR_PROPS, THRESHOLDS, check_metadata, counts, expect, insert_rows
from .tablestate import checksum, delete_kinds

# Nothing but the equality-delete debt calls for a job: no compaction for
# small files (every file here is small), no delete-file thresholds.
EQ_THRESHOLDS = """\
defaults:
  target_file_size: 64MiB
  min_input_files: 1000
  small_file_count: 1000
  delete_min_input_files: 2
  delete_file_threshold: 1000
  delete_file_ratio: 100
  deleted_row_ratio: 0.99
  equality_delete_file_count: 3
  min_reader_margin: 0s
  quiet_period: 0s
  cooldown: 0s
  orphan_margin: 72h
  manifest_count: 1000
"""


def eq_delete(env, ident, rows, equality=("id",), columns=("id", "category")):
    """Commits equality deletes on `equality` for `rows` (dicts holding
    `columns`: the equality columns and the partition's source column)
    through iceberg-go, in one row delta."""
    cmd = [env.tools["eqdelete"], "--catalog-uri", f"file://{env.db}?_pragma=busy_timeout(30000)&_txlock=immediate",
           "--warehouse", env.warehouse, "--catalog-name", CATALOG,
           "--equality", ",".join(equality), "--columns", ",".join(columns), ident]
    with open(os.path.join(env.work, "eqdelete.log"), "a") as logf:
        p = subprocess.run(cmd, input=json.dumps(rows), stdout=subprocess.PIPE, stderr=logf, text=True)
    if p.returncode != 0:
        raise Failure(f"eqdelete {ident} exited {p.returncode} (log: {env.work}/eqdelete.log)")
    out = json.loads(p.stdout)
    log(f"  iceberg-go: equality deletes on {list(equality)} for {out['rows']} keys, {len(out['files'])} files, "
        f"sequence number {out['sequence_number']}")
    return out


def cdc_round(spark, env, table, ident, m, label, n_delete, n_ghost, n_reinsert, n_new=0):
    """One CDC round: equality deletes by id for n_delete live rows and
    n_ghost keys that were never written (a CDC pipeline forwards deletes
    of keys the table never got), then one Spark INSERT of n_reinsert of
    the deleted ids with new values (the deletes are older than those rows
    and must not apply to them) and n_new new rows."""
    ids = sorted(m.rows)
    victims = m.rng.sample(ids, min(n_delete, len(ids)))
    keys = [{"id": i, "category": m.rows[i][1]} for i in victims]
    keys += [{"id": 90_000_000 + m.next_id + k, "category": M.CATEGORIES[k % len(M.CATEGORIES)]} for k in range(n_ghost)]
    eq_delete(env, ident, keys)
    back = [m.rows[i] for i in victims[:n_reinsert]]
    for i in victims:
        del m.rows[i]
    rows = [(r[0], r[1], r[2], r[3] + 2000, f"{label}-again") for r in back]
    rows += m.batch(label, n_new, n_new) if n_new else []
    if rows:
        insert_rows(spark, table, rows)
        m.insert(rows)


def scenario_eqdeletes(work, tools, opts):
    env = Env(work, tools, "s8_eqdeletes")
    env.write_thresholds(EQ_THRESHOLDS)
    spark = env.spark("interop-s8")
    table = f"{CATALOG}.db.cdc"
    ident = "db.cdc"
    res = {}
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
        spark.sql(f"CREATE TABLE {table} ({M.DDL_COLUMNS}) USING iceberg PARTITIONED BY (category) "
                  f"TBLPROPERTIES ({MOR_PROPS})")
        m = M.Model(seed=8)
        for b in range(2):
            rows = m.batch(f"c{b}", 60, 90)
            insert_rows(spark, table, rows)
            m.insert(rows)
        for k in range(3):
            cdc_round(spark, env, table, ident, m, f"r{k}", n_delete=12, n_ghost=3, n_reinsert=4, n_new=12)
        # A second equality field set: (category, qty), every row of one
        # category with one quantity (older rows only, as above).
        victim = m.rows[sorted(m.rows)[5]]
        eq_delete(env, ident, [{"category": victim[1], "qty": victim[3]}], equality=("category", "qty"),
                  columns=("category", "qty"))
        m.delete_where(lambda r: r[1] == victim[1] and r[3] == victim[3])
        exp = expect(spark, env, m, "expected_s8")
        compare_rows(spark, table, exp, "Spark reads iceberg-go's equality deletes")
        before_sum = checksum(spark, table)
        kinds = delete_kinds(spark, table)
        log(f"  before: {kinds}, checksum {before_sum}")
        check(kinds["equality"] >= 4, f"too few equality delete files: {kinds}")
        res["before"] = {"deletes": kinds, "checksum": before_sum}

        # The planner schedules the conversion for the equality-delete debt
        # (equality_delete_file_count), not a compaction.
        plan = env.reactor("plan", ident)
        jobs = [(j["kind"], j.get("partitions")) for j in plan.get("jobs") or []]
        log(f"  reactor plan: {jobs}")
        check(any(k == "convert_equality_deletes" for k, _ in jobs) and not any(k == "compact" for k, _ in jobs),
              f"reactor plan does not schedule convert_equality_deletes alone: {jobs}")
        res["plan"] = jobs

        r = env.reactor("convert-equality-deletes", ident)
        log(f"reactor convert-equality-deletes: {r['outcome']} {counts(r)} in {r['_seconds']:.1f}s")
        check(r["outcome"] == "succeeded", f"conversion did not succeed: {r}")
        res["convert"] = counts(r)
        compare_rows(spark, table, exp, "after reactor convert-equality-deletes")
        after = checksum(spark, table)
        check(after == before_sum, f"checksum changed by the conversion: {before_sum} -> {after}")
        kinds = delete_kinds(spark, table)
        log(f"  after the conversion: {kinds}, checksum {after}")
        check(kinds["equality"] == 0 and kinds["position"] > 0, f"equality deletes left or no position deletes: {kinds}")
        check_metadata(spark, table, "after the conversion", expect_reactor_head=True)
        res["after_convert"] = kinds

        again = env.reactor("convert-equality-deletes", ident)
        log(f"  second conversion: {again['outcome']}")
        check(again["outcome"] == "noop", f"a second conversion found work: {again}")
        plan = env.reactor("plan", ident)
        jobs = [j["kind"] for j in plan.get("jobs") or []]
        check("convert_equality_deletes" not in jobs, f"reactor plan still schedules a conversion: {jobs}")

        # Spark's own procedure on reactor's position-delete files.
        out = spark.sql(f"CALL {CATALOG}.system.rewrite_position_delete_files(table => '{ident}', "
                        f"options => map('rewrite-all', 'true'))").collect()
        log(f"  spark rewrite_position_delete_files: {[tuple(x) for x in out]}")
        check(out and out[0][0] > 0, f"Spark rewrote none of reactor's position-delete files: {out}")
        compare_rows(spark, table, exp, "after Spark's rewrite_position_delete_files")
        check(checksum(spark, table) == before_sum, "checksum changed by Spark's rewrite_position_delete_files")
        res["spark_rewrite"] = [list(map(str, x)) for x in out]

        # More CDC on the rewritten table, converted again, then compacted.
        cdc_round(spark, env, table, ident, m, "r9", n_delete=10, n_ghost=2, n_reinsert=3)
        exp = expect(spark, env, m, "expected_s8_more")
        compare_rows(spark, table, exp, "more equality deletes")
        r = env.reactor("convert-equality-deletes", ident)
        log(f"reactor convert-equality-deletes (2): {r['outcome']} {counts(r)}")
        check(r["outcome"] == "succeeded", f"second conversion did not succeed: {r}")
        compare_rows(spark, table, exp, "after the second conversion")
        # A compaction applying the converted deletes (small files count now).
        env.write_thresholds(THRESHOLDS)
        r = env.reactor("compact", ident, "--partition", f"category={M.CATEGORIES[0]}")
        log(f"reactor compact: {r['outcome']} {counts(r)}")
        check(r["outcome"] == "succeeded" and r["counts"]["removed_delete_files_count"] > 0,
              f"the compaction applied no delete: {r}")
        compare_rows(spark, table, exp, "after reactor compact")
        check_metadata(spark, table, "at the end")
        return res
    finally:
        spark.stop()


def scenario_eqdeletes_v3(work, tools, opts):
    """The same CDC on a format-v3 table Spark also DELETEs from (deletion
    vectors): reactor converts the equality deletes into deletion vectors,
    one per data file, merged with the vector Spark wrote for it; rows,
    checksum and row lineage as before, the v3 delete rules after."""
    from .tablestate import lineage, lineage_problems, v3_delete_problems
    from .v3 import V3_MOR_PROPS

    env = Env(work, tools, "s11_eqdeletes_v3")
    env.write_thresholds(EQ_THRESHOLDS)
    spark = env.spark("interop-s11")
    table = f"{CATALOG}.db.cdc3"
    ident = "db.cdc3"
    res = {}
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
        spark.sql(f"CREATE TABLE {table} ({M.DDL_COLUMNS}) USING iceberg PARTITIONED BY (category) "
                  f"TBLPROPERTIES ({V3_MOR_PROPS})")
        m = M.Model(seed=11)
        for b in range(2):
            rows = m.batch(f"c{b}", 60, 90)
            insert_rows(spark, table, rows)
            m.insert(rows)
        spark.sql(f"DELETE FROM {table} WHERE id % 7 = 3")  # Spark's deletion vectors
        m.delete_where(lambda r: r[0] % 7 == 3)
        for k in range(3):
            cdc_round(spark, env, table, ident, m, f"r{k}", n_delete=12, n_ghost=3, n_reinsert=4, n_new=12)
        exp = expect(spark, env, m, "expected_s11")
        compare_rows(spark, table, exp, "Spark reads iceberg-go's equality deletes beside its DVs")
        before_sum, before_lineage, kinds = checksum(spark, table), lineage(spark, table), delete_kinds(spark, table)
        log(f"  before: {kinds}, checksum {before_sum}")
        check(kinds["equality"] >= 3 and kinds["dv"] > 0, f"want equality deletes and Spark's DVs: {kinds}")
        plan = env.reactor("plan", ident)
        jobs = [j["kind"] for j in plan.get("jobs") or []]
        log(f"  reactor plan: {jobs}")
        check("convert_equality_deletes" in jobs and "compact" not in jobs,
              f"reactor plan does not schedule convert_equality_deletes alone: {jobs}")

        r = env.reactor("convert-equality-deletes", ident)
        log(f"reactor convert-equality-deletes: {r['outcome']} {counts(r)} in {r['_seconds']:.1f}s")
        check(r["outcome"] == "succeeded", f"conversion did not succeed: {r}")
        res["convert"] = counts(r)
        compare_rows(spark, table, exp, "after reactor convert-equality-deletes (v3)")
        check(checksum(spark, table) == before_sum, "checksum changed by the conversion")
        kinds = delete_kinds(spark, table)
        log(f"  after the conversion: {kinds}")
        problems = v3_delete_problems(spark, table, "after the conversion")
        problems += lineage_problems(before_lineage, lineage(spark, table), "after the conversion")
        check(kinds["equality"] == 0 and kinds["position"] == 0 and kinds["dv"] > 0,
              f"want deletion vectors only after the conversion: {kinds}")
        check(not problems, "; ".join(problems))
        check_metadata(spark, table, "after the conversion (v3)", expect_reactor_head=True)
        res["after_convert"] = kinds

        # Spark deletes again on reactor's vectors (it merges them) and reads.
        spark.sql(f"DELETE FROM {table} WHERE id % 11 = 4")
        m.delete_where(lambda r: r[0] % 11 == 4)
        exp = expect(spark, env, m, "expected_s11_after")
        compare_rows(spark, table, exp, "Spark's DELETE on reactor's deletion vectors")
        check(not v3_delete_problems(spark, table, "after Spark's DELETE"), "v3 delete rules broken after Spark's DELETE")
        return res
    finally:
        spark.stop()
