"""Issue 11's benchmark: today's full-graph FSM engine against the goal-directed search, side by side.

    .venv/bin/python -m benchmarks.bench_engine [--quick] [--repeats N] [--out PATH]

Every measurement runs in a fresh process (``benchmarks.engine_workers``), the two engines
interleaved (old, new, old, new, ...), and ratios are paired per repeat before the median is
taken, so load that drifts on this shared 2-core machine hits both sides.

1. Today's size: the clinic of the issue cut down to today's spec language (``clinic_flat``,
   ~90,000 states). Validation: today's (``legacy_fsm``: the engine at LEGACY_COMMIT, loaded
   from git) vs the new one, with its default count budget and counting every state.
2. The curated library: today's twelve YAML files, validated and queried (each named goal's
   distance and oracle path) by today's engine and by the new one.
3. A site too large to enumerate: the faithful clinic (records, parameter pages; over 10^7
   states, ``clinic_lower_bound``, a sample checked reachable). A goal 15 steps deep: its
   oracle path in a fresh process, then an agent's step verdicts; peak memory. Today's
   approach, the whole graph, is run until it stops at 300,000 states.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import console, fmt, median, percentile, print_table, ratio, write_results
from benchmarks.engine_specs import CLINIC, clinic_flat, clinic_lower_bound, write
from benchmarks.legacy_fsm import LEGACY_COMMIT, load_legacy

DEEP_GOAL = ("expr:{pet: 'rex', service: 'dental', day: 'wed', time: '14:00'} in bookings and "
             "{pet: 'milo', service: 'grooming', day: 'fri', time: '09:00'} in bookings and sms")
TARGETS = {"oracle_s": 1.0, "verdict_ms": 5.0, "rss_mb": 300.0, "validation_speedup": 10.0}


def run(kind: str, *args: Any) -> dict[str, Any]:
    """One measurement in a fresh process."""
    env = dict(os.environ, FSM_CACHE="0", PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    out = subprocess.run([sys.executable, "-m", "benchmarks.engine_workers", kind, *map(str, args)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"expected worker {kind} {args} to succeed, got exit {out.returncode}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def today_size(folder: Path, repeats: int) -> dict[str, Any]:
    path = write(clinic_flat(), folder)
    cells: dict[str, list[dict[str, Any]]] = {"old": [], "new": [], "new_exact": []}
    for _ in range(repeats):
        cells["old"].append(run("validate_old", path))
        cells["new"].append(run("validate_new", path))
        cells["new_exact"].append(run("validate_new_exact", path))
    speedup = [ratio(o["seconds"], n["seconds"]) for o, n in zip(cells["old"], cells["new"], strict=True)]
    exact = [ratio(o["seconds"], n["seconds"]) for o, n in zip(cells["old"], cells["new_exact"], strict=True)]
    return {"spec": "clinic_flat (benchmarks/engine_specs.py)", "states": cells["old"][0]["states"], "cells": cells,
            "speedup_median": median(speedup), "speedup_exact_count_median": median(exact)}


def library(repeats: int, sites: list[str]) -> dict[str, Any]:
    legacy_dir = load_legacy().library_dir
    rows: dict[str, Any] = {}
    for site in sites:
        path = legacy_dir / f"{site}.yaml"
        cell: dict[str, list[dict[str, Any]]] = {k: [] for k in ("validate_old", "validate_new", "goals_old", "goals_new")}
        for _ in range(repeats):
            for kind in cell:
                cell[kind].append(run(kind, path))
        rows[site] = {
            "states": cell["validate_old"][0]["states"], "cells": cell,
            "validate_speedup": median(ratio(o["seconds"], n["seconds"]) for o, n in
                                       zip(cell["validate_old"], cell["validate_new"], strict=True)),
            "goals_speedup": median(ratio(o["seconds"], n["seconds"]) for o, n in
                                    zip(cell["goals_old"], cell["goals_new"], strict=True)),
            "same_depths": all(o["depths"] == n["depths"] for o, n in zip(cell["goals_old"], cell["goals_new"], strict=True)),
        }
    return rows


def too_large(repeats: int, sample: int) -> dict[str, Any]:
    cells = [run("big", CLINIC, DEEP_GOAL) for _ in range(repeats)]
    verdict_ms = [1000 * s for c in cells for s in c["verdict_seconds"]]
    full = run("big_full", CLINIC)
    sampled = run("big_sample", CLINIC, sample)
    return {
        "spec": str(CLINIC.relative_to(CLINIC.parents[3])), "states_at_least": clinic_lower_bound(),
        "lower_bound_sample": sampled, "goal": DEEP_GOAL, "depth": cells[0]["depth"],
        "oracle_seconds": [c["oracle_seconds"] for c in cells], "oracle_seconds_median": median(c["oracle_seconds"] for c in cells),
        "verdict_ms_median": median(verdict_ms), "verdict_ms_p90": percentile(verdict_ms, 90),
        "verdict_ms_max": max(verdict_ms), "verdicts": len(verdict_ms),
        "rss_mb_max": max(c["rss_mb"] for c in cells), "rss_base_mb": cells[0]["rss_base_mb"],
        "cells": [{k: v for k, v in c.items() if k != "verdict_seconds"} for c in cells],
        "full_graph": full,
    }


def _print(result: dict[str, Any]) -> None:
    t = result["today_size"]
    print_table(f"Validation, today's size ({t['states']:,} states)", ["engine", "seconds (median)", "peak RSS MB", "states"], [
        [name, fmt(median(c["seconds"] for c in cells), 2), fmt(median(c["rss_mb"] for c in cells), 0),
         f"{cells[0]['states']:,}{'' if cells[0]['exact'] else '+'}"] for name, cells in t["cells"].items()])
    console.print(f"speedup (paired median): {fmt(t['speedup_median'])}x default, {fmt(t['speedup_exact_count_median'])}x counting every state")
    print_table("Curated library (today's YAML files)", ["site", "states", "validate old/new", "goals old/new", "same depths"], [
        [site, f"{r['states']:,}", fmt(r["validate_speedup"]) + "x", fmt(r["goals_speedup"]) + "x", str(r["same_depths"])]
        for site, r in result["library"].items()])
    b = result["too_large"]
    print_table(f"Clinic, >= {b['states_at_least']:.2e} states, goal {b['depth']} steps deep", ["measure", "value", "target"], [
        ["oracle path, fresh process (median s)", fmt(b["oracle_seconds_median"], 3), "< 1"],
        ["step verdict median / p90 / max (ms)", f"{fmt(b['verdict_ms_median'], 2)} / {fmt(b['verdict_ms_p90'], 2)} / {fmt(b['verdict_ms_max'], 1)}", "< 5"],
        ["peak RSS (MB)", fmt(b["rss_mb_max"], 0), "< 300"],
        ["full graph: states before it stopped, seconds, RSS MB", f"{b['full_graph']['states']:,}, {fmt(b['full_graph']['seconds'], 1)}, {fmt(b['full_graph']['rss_mb'], 0)}", ""],
        ["lower bound sample reachable", f"{b['lower_bound_sample']['reachable']}/{b['lower_bound_sample']['sampled']}", "all"],
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, three library sites")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    sites = ["shop", "mail", "travel"] if args.quick else sorted(p.stem for p in load_legacy().library_dir.glob("*.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        with console.status("today's size: validation, old vs new ..."):
            today = today_size(Path(tmp), repeats)
        with console.status("curated library, old vs new ..."):
            lib = library(repeats, sites)
    with console.status("the clinic: a deep goal on a site too large to enumerate ..."):
        big = too_large(repeats, 20 if args.quick else 60)
    result = {"legacy_commit": LEGACY_COMMIT, "repeats": repeats, "today_size": today, "library": lib, "too_large": big}
    result["targets"] = {
        "oracle_under_1s": big["oracle_seconds_median"] < TARGETS["oracle_s"],
        "verdict_under_5ms": big["verdict_ms_median"] < TARGETS["verdict_ms"],
        "memory_under_300mb": big["rss_mb_max"] < TARGETS["rss_mb"],
        "validation_10x": (today["speedup_median"] or 0) >= TARGETS["validation_speedup"],
    }
    _print(result)
    path = write_results("bench_engine", result, args.out, quick=args.quick)
    console.print(f"targets: {result['targets']}\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
