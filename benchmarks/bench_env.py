"""Issue 2's benchmark: env speed on MiniWoB++, side by side in one run.

    .venv/bin/python -m benchmarks.bench_env [--quick]

Systems: (a) the floor, a bare Playwright+CDP click+screenshot loop; (b) this env
(``AsyncEnv`` + ``BrowserSandbox`` + ``MiniWoBTask``); (c) the ``miniwob`` package's
gymnasium env (Selenium + Debian's chromedriver); (d) BrowserGym's MiniWoB env in its own
venv, with its delays off (``slow_mo=0, pre_observation_delay=0``) and, with fewer steps,
as shipped (``slow_mo=100`` ms per Playwright call, ``pre_observation_delay=0.5`` s per step).

Same tasks, same seeds, same 160x210 task area, same click points: a seeded list of points
inside MiniWoB's instruction box (the top 50 px), where a click never ends an episode, so
every system runs the same number of steps with no resets in the timed loop (any episode
that does end is counted in ``ended``). MiniWoB's 10 s episode timer is stopped after each
reset (``core.clearTimer()``, as BrowserGym does), else slow systems' episodes expire.
A "cell" = one system, one task, N envs at once: open, time the resets, warm up, read
memory, run the timed steps. Cells are interleaved (the system order rotates each repeat)
and summarised by medians (the step latency pooled over a system's cells); ratios are
paired per (repeat, task, concurrency) so load drift on a shared machine cancels out.
The result file keeps each cell's step-latency p50/p90, not every step's time.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from itertools import product
from typing import Any

from rich.progress import Progress

from benchmarks import browsergym_runner
from benchmarks.common import (
    console,
    fmt,
    latency_stats,
    median,
    print_table,
    ratio,
    tree_memory,
    write_results,
)
from benchmarks.env_variants import CHROMIUM, VARIANTS
from harness.resources import TaskResources
from harness.tasks.miniwob import VIEWPORT
from sandboxes.browser.chromium import CHROMIUM_FLAGS

SYSTEMS = ("floor", "floor-judged", "harness", "miniwob", "browsergym", "browsergym-default")
LABELS = {
    **{name: cls.label for name, cls in VARIANTS.items()},
    "browsergym": "(d) BrowserGym, delays off",
    "browsergym-default": "(d') BrowserGym as shipped",
}
ONE_FRAME_S = 0.025  # between one 60 Hz frame (16.7 ms) and two (33.3 ms)
BG_DELAYS = {"browsergym": (0, 0.0), "browsergym-default": (100, 0.5)}


def click_points(n: int, seed: int = 0) -> list[tuple[int, int]]:
    """Seeded points inside the instruction box (x 8-152, y 6-44 of the 160x210 area)."""
    rng = random.Random(seed)
    return [(rng.randint(8, 152), rng.randint(6, 44)) for _ in range(n)]


async def inprocess_cell(system: str, task: str, n: int, plan: dict[str, Any],
                         resources: TaskResources) -> dict[str, Any]:
    variant = VARIANTS[system](resources)
    await variant.open(task, n)
    points = plan["points"]
    try:
        resets = await reset_episodes(variant, n, plan)
        await variant.settle()  # the timed steps below are an episode's steady state
        memory = tree_memory(variant.memory_roots())
        for i, (x, y) in product(range(n), points[: plan["warmup"]]):
            await variant.step(i, x, y)
        latencies: list[float] = []
        ended = 0

        async def worker(i: int) -> None:
            nonlocal ended
            for x, y in points[: plan["steps"]]:
                start = time.perf_counter()
                done = await variant.step(i, x, y)
                latencies.append(time.perf_counter() - start)
                if done:
                    ended += 1
                    await variant.reset(i, plan["reset_seeds"][0])
                    await variant.disarm(i)

        start = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(n)))
        wall = time.perf_counter() - start
    finally:
        await variant.close()
    steps = len(latencies)
    return {"resets": resets, "latencies": latencies, "wall_s": wall, "steps": steps,
            "steps_per_s": steps / wall, "ended": ended, "memory": memory}


async def reset_episodes(variant: Any, n: int, plan: dict[str, Any]) -> list[float]:
    """Episodes of ``plan["episode_steps"]`` steps, each after a reset: N=1 times its resets
    (the first opens the env's first context; the later ones may be hidden behind the
    episode before them); N>1 resets its envs at once, twice, and times nothing."""
    resets: list[float] = []
    seeds = plan["reset_seeds"] if n == 1 else plan["reset_seeds"][:2]
    for k, seed in enumerate(seeds):
        if k:
            await asyncio.gather(*(play(variant, i, plan) for i in range(n)))
        start = time.perf_counter()
        await asyncio.gather(*(variant.reset(i, seed + i) for i in range(n)))
        resets.append(time.perf_counter() - start)
        for i in range(n):
            await variant.disarm(i)
    return resets if n == 1 else []


async def play(variant: Any, i: int, plan: dict[str, Any]) -> None:
    for x, y in plan["points"][: plan["episode_steps"]]:
        await variant.step(i, x, y)


def browsergym_cell(system: str, task: str, n: int, plan: dict[str, Any],
                    pages_url: str) -> dict[str, Any]:
    slow_mo, delay = BG_DELAYS[system]
    steps = plan["steps"] if system == "browsergym" else plan["default_steps"]
    job = {
        "task": task, "miniwob_url": f"{pages_url}miniwob/", "chromium": CHROMIUM,
        "flags": list(CHROMIUM_FLAGS), "viewport": list(VIEWPORT), "slow_mo": slow_mo,
        "pre_observation_delay": delay, "points": plan["points"], "warmup": plan["warmup"],
        "steps": steps, "reset_seeds": plan["reset_seeds"][:3] if n == 1 else plan["reset_seeds"][:1],
    }
    result = browsergym_runner.run_cell(job, n)
    if n > 1:
        result["resets"] = []  # concurrent resets are not the reset time we report
    return result


def summarize(cells: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    """Medians per system and concurrency, and paired ratios against this env."""
    out: dict[str, Any] = {}
    for system in systems:
        row: dict[str, Any] = {}
        for n in (1, 4):
            mine = [c for c in cells if c["system"] == system and c["n"] == n and "error" not in c]
            row[f"c{n}_steps_per_s"] = median(c["steps_per_s"] for c in mine)
            row[f"c{n}_step_ms_p50"] = median(1000 * t for c in mine for t in c["latencies"])
            pooled = [t for c in mine for t in c["latencies"]]
            # A capture waits for the next 60 Hz frame: a step takes about 17 ms or about 33.
            row[f"c{n}_one_frame_share"] = (sum(t < ONE_FRAME_S for t in pooled) / len(pooled)
                                            if pooled else None)
            row[f"c{n}_rss_mb_per_env"] = median(c["memory"]["rss_mb"] / n for c in mine)
            row[f"c{n}_pss_mb_per_env"] = median(c["memory"]["pss_mb"] / n for c in mine)
            row[f"c{n}_ended"] = sum(c["ended"] for c in mine)
        mine = [c for c in cells if c["system"] == system and "error" not in c and c["resets"]]
        row["first_reset_ms_p50"] = median(1000 * c["resets"][0] for c in mine)
        row["second_reset_ms_p50"] = median(1000 * c["resets"][1] for c in mine if len(c["resets"]) > 1)
        row["reset_ms_p50"] = median(1000 * t for c in mine for t in c["resets"][2:])
        row["errors"] = sorted({c["error"] for c in cells if c["system"] == system and "error" in c})
        out[system] = row
    out["paired_ratios"] = {
        f"harness_vs_{other}_c{n}": _paired(cells, other, n)
        for other in systems if other != "harness" for n in (1, 4)
    }
    return out


def compact(cell: dict[str, Any]) -> dict[str, Any]:
    """A cell as the result file keeps it: its step-latency p50/p90 in place of every
    step's time (the summary's pooled medians are computed from the raw times first)."""
    out: dict[str, Any] = {}
    for key, value in cell.items():
        if key == "latencies":
            out.update(latency_stats(value))
        else:
            out[key] = value
    return out


def _paired(cells: list[dict[str, Any]], other: str, n: int) -> float | None:
    """Median over (repeat, task) of harness steps/s divided by ``other``'s."""
    by_key = {(c["system"], c["rep"], c["task"]): c for c in cells if c["n"] == n and "error" not in c}
    ratios = [ratio(h["steps_per_s"], by_key[(other, rep, task)]["steps_per_s"])
              for (system, rep, task), h in by_key.items()
              if system == "harness" and (other, rep, task) in by_key]
    return median(ratios)


def report(summary: dict[str, Any], systems: list[str]) -> None:
    rows = []
    for system in systems:
        s = summary[system]
        rows.append([LABELS[system], fmt(s["c1_steps_per_s"]), fmt(s["c4_steps_per_s"]),
                     fmt(s["c1_step_ms_p50"]), fmt(_percent(s["c1_one_frame_share"]), 0, "%"),
                     fmt(s["first_reset_ms_p50"], 0),
                     fmt(s["second_reset_ms_p50"], 0), fmt(s["reset_ms_p50"], 0),
                     fmt(s["c1_rss_mb_per_env"], 0), fmt(s["c4_rss_mb_per_env"], 0),
                     fmt(s["c4_pss_mb_per_env"], 0), "; ".join(s["errors"])[:60] or "-"])
    print_table("MiniWoB++ env speed (medians)",
                ["system", "steps/s c1", "steps/s c4", "step ms c1", "c1 steps in 1 frame",
                 "1st reset ms", "2nd reset ms",
                 "later resets ms", "RSS MB/env c1",
                 "RSS MB/env c4", "PSS MB/env c4", "errors"], rows)
    ratios = summary["paired_ratios"]
    print_table("this env's steps/s divided by each system's (paired medians)",
                ["vs", "c1", "c4"],
                [[LABELS[o], fmt(ratios.get(f"harness_vs_{o}_c1"), 2), fmt(ratios.get(f"harness_vs_{o}_c4"), 2)]
                 for o in systems if o != "harness"])


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def targets(summary: dict[str, Any]) -> dict[str, Any]:
    r = summary["paired_ratios"]
    floor = [r.get("harness_vs_floor_c1"), r.get("harness_vs_floor_c4")]
    reset = summary.get("harness", {}).get("reset_ms_p50")
    return {
        "within_15pct_of_floor": None if None in floor else all(x >= 0.85 for x in floor),
        # issue 8: a step in one frame as the floor's (c1, paired), and resets hidden
        "c1_at_least_0.95x_floor": None if floor[0] is None else floor[0] >= 0.95,
        "reset_under_50ms": None if reset is None else reset < 50,
        "2x_faster_than_miniwob": _at_least(r, "miniwob", 2.0),
        "2x_faster_than_browsergym": _at_least(r, "browsergym", 2.0),
    }


def _at_least(r: dict[str, Any], other: str, bound: float) -> bool | None:
    values = [r.get(f"harness_vs_{other}_c{n}") for n in (1, 4)]
    return None if None in values else all(v >= bound for v in values)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 tasks, 1 repeat, fewer steps")
    parser.add_argument("--tasks", default=None, help="comma-separated MiniWoB task names")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats of every cell")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per env per cell")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="which systems to run")
    parser.add_argument("--concurrency", default="1,4", help="comma-separated envs at once per cell")
    parser.add_argument("--episode-steps", type=int, default=30,
                        help="steps of the episode before each timed reset but the first")
    parser.add_argument("--out", default=None, help="JSON results path (default: benchmarks/results/"
                        "<name>.json, or runs/bench-quick/<name>.json with --quick)")
    args = parser.parse_args(argv)
    tasks = (args.tasks or ("click-button,click-link" if args.quick else
                            "click-button,click-link,click-checkboxes")).split(",")
    repeats = args.repeats or (1 if args.quick else 3)
    plan = {"steps": args.steps or (15 if args.quick else 30), "default_steps": 4 if args.quick else 8,
            "warmup": 2, "reset_seeds": [1000, 1001, 1002, 1003, 1004, 1005],
            "episode_steps": args.episode_steps}
    plan["points"] = click_points(max(plan["steps"] + plan["warmup"], plan["episode_steps"]))
    systems = [s for s in args.systems.split(",") if s]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        parser.error(f"expected systems among {', '.join(SYSTEMS)}, got {', '.join(unknown)}")
    plan["concurrency"] = [int(n) for n in args.concurrency.split(",")]
    cells = asyncio.run(_run_cells(systems, tasks, repeats, plan))
    summary = summarize(cells, systems)
    report(summary, systems)
    met = targets(summary)
    console.print(f"targets: {met}")
    path = write_results("bench_env", {"plan": {**plan, "tasks": tasks, "repeats": repeats,
                                                  "systems": systems, "points": plan["points"]},
                                       "summary": summary, "targets": met,
                                       "cells": [compact(c) for c in cells]},
                         out=args.out, quick=args.quick)
    console.print(f"results: {path}")
    return summary


async def _run_cells(systems: list[str], tasks: list[str], repeats: int,
                     plan: dict[str, Any]) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = []
    combos = [(rep, task, n) for rep in range(repeats) for task in tasks for n in plan["concurrency"]]
    # One page server for every system and cell, on this loop: the other systems' blocking
    # calls run on threads (or in subprocesses), so the loop is free to serve them.
    async with TaskResources() as resources:
        with Progress(console=console, transient=True) as progress:
            bar = progress.add_task("cells", total=len(combos) * len(systems))
            for rep, task, n in combos:
                order = systems[rep % len(systems):] + systems[: rep % len(systems)]
                for system in order:
                    progress.update(bar, description=f"{system} {task} c{n}")
                    cells.append(await _run_cell(system, task, n, rep, plan, resources))
                    progress.advance(bar)
    return cells


async def _run_cell(system: str, task: str, n: int, rep: int, plan: dict[str, Any],
                    resources: TaskResources) -> dict[str, Any]:
    cell: dict[str, Any] = {"system": system, "task": task, "n": n, "rep": rep}
    try:
        if system.startswith("browsergym"):
            pages_url = await resources.miniwob_url()
            cell.update(await asyncio.to_thread(browsergym_cell, system, task, n, plan, pages_url))
        else:
            cell.update(await inprocess_cell(system, task, n, plan, resources))
    except Exception as exc:  # a system that cannot run is reported, not fatal
        cell["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        console.print(f"[red]{system} {task} c{n}: {cell['error']}")
    return cell


if __name__ == "__main__":
    main()
