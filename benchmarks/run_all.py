"""Every benchmark in quick mode, one after the other (``make bench``).

    .venv/bin/python -m benchmarks.run_all [--full]

Quick runs write their JSON under ``runs/bench-quick/`` (ignored by git), so ``make bench``
never replaces the committed full-mode results; ``--full`` writes ``benchmarks/results/``
with each benchmark's default settings (BENCHMARKS.md gives the exact commands behind the
committed files). A benchmark that fails is reported and the others still run. The exit
status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from benchmarks import (
    bench_desktop,
    bench_engine,
    bench_env,
    bench_fsm,
    bench_grpo,
    bench_layers,
    bench_leaks,
    bench_policy,
    bench_store,
)
from benchmarks.common import console

BENCHMARKS = {"bench_env": bench_env.main, "bench_fsm": bench_fsm.main, "bench_store": bench_store.main,
              "bench_policy": bench_policy.main, "bench_engine": bench_engine.main,
              "bench_leaks": bench_leaks.main, "bench_layers": bench_layers.main,
              "bench_desktop": bench_desktop.main, "bench_grpo": bench_grpo.main}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="full settings instead of --quick")
    parser.add_argument("--only", default=None, help="comma-separated subset of " + ", ".join(BENCHMARKS))
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(BENCHMARKS)
    failed = []
    for name in names:
        console.rule(name)
        start = time.perf_counter()
        try:
            BENCHMARKS[name]([] if args.full else ["--quick"])
        except Exception:  # one broken benchmark must not hide the others' numbers
            failed.append(name)
            console.print(traceback.format_exc())
        console.print(f"{name}: {time.perf_counter() - start:.0f}s")
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
