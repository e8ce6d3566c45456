"""Side-by-side table of bench/soak runs with different maintainers
(interop/peers/run): each DIR holds one run's result.json and samples.csv.

  python3 interop/peers/compare.py WORK/reactor WORK/flink WORK/spark

Prints one column per maintainer, then reactor's ratios to each peer and
the issue's targets (issue 26): against Flink, a lower scan ratio at every
sample after the first minute, write amplification no higher, CPU <= 1/5;
against the scheduled Spark, a lower scan ratio at every sample, CPU <=
1/10. Samples are paired by their index (the same -interval in every run).
"""

import csv
import json
import os
import sys


def load(d):
    with open(os.path.join(d, "result.json")) as f:
        r = json.load(f)
    with open(os.path.join(d, "samples.csv")) as f:
        r["samples"] = list(csv.DictReader(f))
    return r


def scans(r, after_s):
    """(elapsed, scan ratio) of the samples with a timed scan while written."""
    out = []
    for s in r["samples"]:
        t = float(s["elapsed_s"])
        if t < after_s or t > r["written_s"] + 0.5 or not s.get("scan_ratio"):
            continue
        out.append((t, float(s["scan_ratio"])))
    return out


def mib(n):
    return f"{n / (1 << 20):.0f} MiB"


ROWS = [
    ("live data files, last (ideal)", lambda r: f"{r['live_files_last']} ({r['ideal_files_last']})"),
    ("live data files, median / max", lambda r: f"{r['live_files_median']:.0f} / {r['live_files_max']}"),
    ("full scan vs compacted, median", lambda r: f"{r['scan_ratio_median']:.2f}x"),
    ("full scan vs compacted, worst", lambda r: f"{r['scan_ratio_max']:.2f}x"),
    ("full scan vs compacted, last", lambda r: f"{r['scan_ratio_last']:.2f}x"),
    ("write amplification", lambda r: f"{r['write_amp']:.2f}x"),
    ("maintainer CPU s (while written)", lambda r: f"{r['cpu_s']:.1f}"),
    ("maintainer CPU s (with start-up)", lambda r: f"{r['cpu_total_s']:.1f}"),
    ("maintainer CPU ms per writer commit", lambda r: f"{1000 * r['cpu_s'] / max(r['commits'], 1):.1f}"),
    ("maintainer peak memory", lambda r: mib(r["peak_rss_bytes"])),
    ("snapshots, max / last", lambda r: f"{r['snapshots_max']} / {r['snapshots_last']}"),
    ("data manifests, max / last", lambda r: f"{r['data_manifests_max']} / {r['data_manifests_last']}"),
    ("writer commit p50 / p99 ms", lambda r: f"{r['commit_p50_ms']:.0f} / {r['commit_p99_ms']:.0f}"),
    ("writer conflicts", lambda r: str(r["writer_conflicts"])),
    ("commits", lambda r: str(r["commits"])),
    ("rows and checksum", lambda r: ("OK " if r["rows_ok"] else "MISMATCH ") + f"{r['rows_read']}/{r['rows_written']}"),
    ("load1, mean", lambda r: f"{r['load1_mean']:.1f}"),
]


def ratio(a, b):
    return a / b if b else float("inf") if a else 1.0


def main(dirs):
    runs = [load(d) for d in dirs]
    names = [r["maintainer"] for r in runs]
    r0 = runs[0]
    print(f"\nstreaming health, {r0['tables']} table(s) x {r0['partitions']} partitions, "
          f"{r0['rate']:g} commits/s of {r0['rows_per_commit']} rows, {r0['written_s']:.0f} s written "
          f"(medians over the samples after the warm-up):\n")
    w = max(len(n) for n, _ in ROWS) + 2
    cw = max(18, *(len(n) + 2 for n in names))
    print(" " * w + "".join(n.rjust(cw) for n in names))
    for label, f in ROWS:
        print(label.ljust(w) + "".join(f(r).rjust(cw) for r in runs))

    reactor = next((r for r in runs if r["maintainer"] == "reactor"), None)
    if reactor is None:
        return 0
    print()
    for peer in runs:
        name = peer["maintainer"]
        if peer is reactor:
            continue
        cpu = ratio(reactor["cpu_s"], peer["cpu_s"])
        after = 60.0 if name == "flink" else 0.0
        a, b = scans(reactor, after), scans(peer, after)
        n = min(len(a), len(b))
        lower = sum(1 for i in range(n) if a[i][1] < b[i][1])
        per_commit = ratio(reactor["cpu_s"] / max(reactor["commits"], 1), peer["cpu_s"] / max(peer["commits"], 1))
        print(f"reactor / {name}: scan median {ratio(reactor['scan_ratio_median'], peer['scan_ratio_median']):.2f}x, "
              f"live files median {ratio(reactor['live_files_median'], peer['live_files_median']):.2f}x, "
              f"write amplification {ratio(reactor['write_amp'], peer['write_amp']):.2f}x, CPU {cpu:.2f}x "
              f"({per_commit:.2f}x per writer commit), "
              f"peak memory {ratio(reactor['peak_rss_bytes'], peer['peak_rss_bytes']):.2f}x, "
              f"commit p99 {ratio(reactor['commit_p99_ms'], peer['commit_p99_ms']):.2f}x")
        cpu_target = 1 / 5 if name == "flink" else 1 / 10
        checks = [
            (f"scan ratio lower at every sample{' after the first minute' if after else ''}",
             n > 0 and lower == n, f"{lower} of {n} samples"),
            (f"CPU <= 1/{round(1 / cpu_target)} of {name}'s", cpu <= cpu_target, f"{cpu:.2f}x"),
        ]
        if name == "flink":
            checks.append(("write amplification no higher", reactor["write_amp"] <= peer["write_amp"],
                           f"{reactor['write_amp']:.2f}x vs {peer['write_amp']:.2f}x"))
        for what, ok, measured in checks:
            print(f"  {'met   ' if ok else 'MISSED'}  {what}: {measured}")
    return 0 if all(r["rows_ok"] for r in runs) else 1


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
