"""What the delete and v3 scenarios read of a table besides its rows,
through Spark's metadata tables and metadata columns: a checksum of the
rows, the delete files by kind, the deletion-vector rules of format v3, and
row lineage (_row_id, _last_updated_sequence_number)."""

from collections import Counter

from .common import log

ROW_COLUMNS = "id, category, ts, qty, note"


def checksum(spark, table):
    """(rows, sum of xxhash64 over every column): equal before and after a
    job that must not change what a scan returns. The sum is a decimal:
    ANSI mode (Spark 4's default) fails a bigint sum that overflows."""
    r = spark.sql(f"SELECT count(*) AS n, coalesce(sum(CAST(xxhash64({ROW_COLUMNS}) AS DECIMAL(38,0))), 0) AS h "
                  f"FROM {table}").collect()[0]
    return [int(r.n), str(r.h)]


def delete_files(spark, table):
    """The live delete files: content 1 (positions: a Parquet file or, in
    v3, a deletion vector in a Puffin file) and content 2 (equality)."""
    return spark.sql(f"SELECT content, file_format, file_path, referenced_data_file, record_count "
                     f"FROM {table}.delete_files").collect()


def delete_kinds(spark, table):
    """Counts of live delete files: position (Parquet), dv (Puffin),
    equality."""
    out = {"position": 0, "dv": 0, "equality": 0}
    for d in delete_files(spark, table):
        if d.content == 2:
            out["equality"] += 1
        elif d.file_format.upper() == "PUFFIN":
            out["dv"] += 1
        else:
            out["position"] += 1
    return out


def v3_delete_problems(spark, table, label):
    """The spec's rules for deletes of a v3 table: position deletes are
    deletion vectors only (no new Parquet position-delete files; those of
    a table upgraded from v2 are to be rewritten into vectors), at most one
    vector per data file, and none whose data file is no longer live."""
    dels = delete_files(spark, table)
    live = {r[0] for r in spark.sql(f"SELECT file_path FROM {table}.data_files").collect()}
    parquet = [d.file_path for d in dels if d.content == 1 and d.file_format.upper() != "PUFFIN"]
    dvs = [d for d in dels if d.content == 1 and d.file_format.upper() == "PUFFIN"]
    dup = {f: n for f, n in Counter(d.referenced_data_file for d in dvs).items() if n > 1}
    dangling = sorted({d.referenced_data_file for d in dvs if d.referenced_data_file not in live})
    problems = []
    if parquet:
        problems.append(f"{label}: {len(parquet)} Parquet position-delete files in a v3 table, e.g. {parquet[:2]}")
    if dup:
        problems.append(f"{label}: {len(dup)} data files with more than one deletion vector: {list(dup.items())[:2]}")
    if dangling:
        problems.append(f"{label}: {len(dangling)} deletion vectors of data files no longer live: {dangling[:2]}")
    log(f"  deletes ({label}): {len(dvs)} deletion vectors, {len(parquet)} Parquet position-delete files, "
        f"{sum(1 for d in dels if d.content == 2)} equality; {len(dup)} data files with duplicate vectors, "
        f"{len(dangling)} dangling vectors")
    return problems


def lineage(spark, table):
    """id -> (_row_id, _last_updated_sequence_number) as Spark reads them."""
    return {r.id: (r._row_id, r._last_updated_sequence_number) for r in spark.sql(
        f"SELECT id, _row_id, _last_updated_sequence_number FROM {table}").collect()}


def lineage_problems(before, after, label, sample=5):
    """The spec's row lineage through a rewrite: a row keeps its _row_id
    and _last_updated_sequence_number (rewritten files carry both as
    columns), every row has a _row_id, and no two rows share one. Rows in
    `before` only (deleted meanwhile) and in `after` only (inserted) are
    checked for presence and uniqueness only."""
    problems = []
    nulls = [i for i, (rid, _) in after.items() if rid is None]
    dups = {rid: n for rid, n in Counter(rid for rid, _ in after.values() if rid is not None).items() if n > 1}
    common = [i for i in after if i in before]
    moved = sorted(i for i in common if before[i][0] != after[i][0])
    reseq = sorted(i for i in common if before[i][1] != after[i][1])
    if nulls:
        problems.append(f"{label}: {len(nulls)} of {len(after)} rows have no _row_id")
    if dups:
        problems.append(f"{label}: {len(dups)} _row_id values held by more than one row, e.g. {list(dups.items())[:3]}")
    if moved:
        problems.append(f"{label}: {len(moved)} of {len(common)} rows changed _row_id, e.g. "
                        + ", ".join(f"id {i}: {before[i][0]} -> {after[i][0]}" for i in moved[:sample]))
    if reseq:
        problems.append(f"{label}: {len(reseq)} of {len(common)} rows changed _last_updated_sequence_number, e.g. "
                        + ", ".join(f"id {i}: {before[i][1]} -> {after[i][1]}" for i in reseq[:sample]))
    log(f"  lineage ({label}): {len(after)} rows, {len(common)} kept: {len(moved)} changed _row_id, "
        f"{len(reseq)} changed _last_updated_sequence_number, {len(nulls)} without _row_id, {len(dups)} duplicate ids")
    return problems
