"""Entry point: python -m harness COMMAND ...

  scenarios WORK [NAME...] [--sort] [--report FILE]   run the scenarios (all by default)
  bench WORK [--report FILE]                          the peer benchmark
  appender / crashwriter / spark-op ...               helper processes the above start

interop/run and interop/bench set INTEROP_REACTOR, INTEROP_RENDER and
INTEROP_JARS and call this; run them, not this."""

import json
import os
import sys
import time
import traceback

from .common import Failure, log, tools_from_env


def scenarios_main(argv):
    from .scenarios import KNOWN_BUGS, PENDING, SCENARIOS

    work, names, opts, report = argv[0], [], {}, None
    it = iter(argv[1:])
    for a in it:
        if a == "--sort":
            opts["sort"] = True
        elif a == "--strict-orphans":
            opts["strict_orphans"] = True
        elif a == "--report":
            report = next(it)
        else:
            names.append(a)
    names = names or list(SCENARIOS)
    every = {**SCENARIOS, **PENDING, **KNOWN_BUGS}
    unknown = [n for n in names if n not in every]
    if unknown:
        print(f"unknown scenario(s) {unknown}; scenarios: {list(SCENARIOS)}, pending: {list(PENDING)}, "
              f"known-bug reproductions: {list(KNOWN_BUGS)}",
              file=sys.stderr)
        return 2
    tools = tools_from_env()
    results, failed = {}, []
    for n in names:
        log(f"=== scenario {n} ===")
        t0 = time.time()
        try:
            res = every[n](work, tools, opts)
            results[n] = {"ok": True, "seconds": round(time.time() - t0, 1), "result": res}
            log(f"=== scenario {n}: PASS in {time.time() - t0:.0f}s ===")
        except Failure as e:
            failed.append(n)
            results[n] = {"ok": False, "seconds": round(time.time() - t0, 1), "error": str(e)}
            log(f"=== scenario {n}: FAIL in {time.time() - t0:.0f}s ===\n{e}")
        except Exception as e:  # noqa: BLE001 - report and go on with the next scenario
            failed.append(n)
            results[n] = {"ok": False, "seconds": round(time.time() - t0, 1),
                          "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
            log(f"=== scenario {n}: ERROR in {time.time() - t0:.0f}s ===\n{traceback.format_exc()}")
    if report:
        with open(report, "w") as f:
            json.dump(results, f, indent=2, default=str)
    log("summary: " + ", ".join(f"{n} {'PASS' if results[n]['ok'] else 'FAIL'} ({results[n]['seconds']}s)" for n in names))
    return 1 if failed else 0


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "scenarios":
        return scenarios_main(rest)
    if cmd == "appender":
        from .scenarios import appender_main
        appender_main(*rest)
        return 0
    if cmd == "crashwriter":
        from .scenarios import crashwriter_main
        crashwriter_main(*rest)
        return 0
    if cmd == "bench":
        from .bench import bench_main
        return bench_main(rest)
    if cmd == "spark-op":
        from .bench import spark_op_main
        return spark_op_main(rest)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(sys.argv[1:]))
