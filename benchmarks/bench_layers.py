"""Issue 10's layer benchmark: episodes per minute through each env layer, side by side.

    .venv/bin/python -m benchmarks.bench_layers [--layers local,isolated,ray] [--quick]

Every layer runs the same episodes (the oracle on ``--task``, seeds 0..N-1) at the same
``--concurrency`` through ``EpisodeRunner(envs=layer)``; the agent and every sink are on
this process in every layer. A round measures each layer once, in an order that rotates
from round to round; each measurement starts the layer (timed apart, as ``startup_s``:
Chromium launches, jails, Ray actors), runs ``concurrency`` warm-up episodes (untimed),
then times ``--episodes`` episodes. The cost of a layer is its episodes per minute over
local's *in the same round* (a ratio taken side by side, so a busy machine slows both),
reported as the median over rounds, with the load average seen. Beside the wall time it
counts the CPU seconds per episode of this process and every process under it (browsers,
jails, Playwright's drivers; Ray's daemons and actors for the Ray layers only), which a
shared machine's load disturbs much less than episodes per minute.

A layer is a name in ``LAYERS`` mapping to a function that makes its ``EnvProvider`` for a
concurrency; add yours there, and it is measured beside the others. The env-server and
container layers come from ``benchmarks.serving_layers``; a provider whose processes are
not under this one (containers) reports their CPU seconds by ``extra_cpu_s()``. Ray runs locally, started once (``ray.init(num_cpus=2)``)
before the first round, so its start-up is not counted against any layer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import console, fmt, median, print_table, write_results
from benchmarks.serving_layers import SERVING_LAYERS, prepare
from harness.agents.registry import make_agent
from harness.env_providers import EnvProvider, make_env_provider
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from sandboxes.leftovers import descendants


def _ray_layer(inner: str) -> Callable[[int], EnvProvider]:
    def make(concurrency: int) -> EnvProvider:
        from harness.ray_envs import RayConfig, RayEnvs

        return RayEnvs(RayConfig(inner=inner, envs_per_actor=max(2, concurrency)))
    return make


#: layer name -> (what it is, a function making its env provider for a concurrency)
LAYERS: dict[str, tuple[str, Callable[[int], EnvProvider]]] = {
    "local": ("LocalEnvs: contexts of one shared Chromium, in this process",
              lambda _c: make_env_provider("local")),
    "isolated": ("IsolatedEnvs: a Chromium per sandbox, each in its own jail",
                 lambda _c: make_env_provider("isolated")),
    "ray": ("RayEnvs over local envs: one actor hosting every env", _ray_layer("local")),
    "ray-isolated": ("RayEnvs over isolated envs", _ray_layer("isolated")),
    **SERVING_LAYERS,  # env-server, container
}


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu() -> dict[tuple[int, int], float]:
    """CPU seconds of this process and every process under it, by (pid, start time): user
    and system time, plus that of their children that ended and were waited for."""
    cpu = {}
    for pid in [os.getpid(), *(info.pid for info in descendants(os.getpid()))]:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        # after the command: state is field 3, utime..cstime 14-17, starttime 22 (1-based)
        cpu[(pid, int(fields[19]))] = sum(int(f) for f in fields[11:15]) / CLOCK_TICKS
    return cpu


def cpu_used(before: dict[tuple[int, int], float], after: dict[tuple[int, int], float],
             skip: set[tuple[int, int]]) -> float:
    """CPU seconds spent between two ``tree_cpu`` looks by the processes alive at the second,
    less those in ``skip`` (a process that ended in between is not counted)."""
    return sum(t - before.get(key, 0.0) for key, t in after.items() if key not in skip)


async def measure(layer: str, *, task: str, episodes: int, concurrency: int,
                  shared: set[tuple[int, int]] | None = None) -> dict[str, Any]:
    """Start one layer, warm it up, and time ``episodes`` episodes through it.

    ``shared``: processes that were there before any layer (Ray's own): their CPU counts
    for the Ray layers only."""
    shared = shared or set()
    skip = set() if layer.startswith("ray") else shared
    envs = LAYERS[layer][1](concurrency)
    config = RunnerConfig(concurrency=concurrency, progress=False, save_screenshots=False)
    runner = EpisodeRunner(make_agent("oracle"), config, envs=envs)
    try:
        started = time.perf_counter()
        await envs.start()
        await runner.run(episode_specs([task], concurrency, seed=10_000))  # warm-up: every slot
        startup = time.perf_counter() - started
        load = os.getloadavg()[0]
        extra = getattr(envs, "extra_cpu_s", None)  # processes not under this one (containers)
        extra_before = await asyncio.to_thread(extra) if extra else 0.0
        cpu_before = tree_cpu()
        began = time.perf_counter()
        records = await runner.run(episode_specs([task], episodes, seed=0))
        wall = time.perf_counter() - began
        cpu = cpu_used(cpu_before, tree_cpu(), skip)
        if extra:
            cpu += await asyncio.to_thread(extra) - extra_before
    finally:
        await envs.close()
    return {"layer": layer, "episodes": episodes, "wall_s": wall, "startup_s": startup,
            "episodes_per_minute": 60 * episodes / wall, "load_1m": load,
            "cpu_s_per_episode": cpu / episodes,
            "succeeded": sum(r.success for r in records),
            "errors": sum(r.error is not None for r in records),
            "steps": sum(r.steps for r in records)}


async def run(layers: list[str], *, task: str, episodes: int, concurrency: int,
              rounds: int) -> dict[str, Any]:
    if any(name.startswith("ray") for name in layers):
        import ray

        if not ray.is_initialized():
            ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    prepare(layers)
    shared = set(tree_cpu()) - {key for key in tree_cpu() if key[0] == os.getpid()}
    measurements = []
    for round_index in range(rounds):
        order = layers[round_index % len(layers):] + layers[:round_index % len(layers)]
        for layer in order:
            result = await measure(layer, task=task, episodes=episodes, concurrency=concurrency,
                                   shared=shared)
            result["round"] = round_index
            measurements.append(result)
            console.print(f"round {round_index} {layer}: {result['episodes_per_minute']:.1f} "
                          f"episodes/min, {result['cpu_s_per_episode']:.2f} CPU s/episode, "
                          f"start-up {result['startup_s']:.1f}s, "
                          f"load {result['load_1m']:.1f}")
    return {"task": task, "concurrency": concurrency, "episodes": episodes, "rounds": rounds,
            "layers": {name: LAYERS[name][0] for name in layers},
            "measurements": measurements, "summary": summarize(measurements, layers)}


def summarize(measurements: list[dict[str, Any]], layers: list[str]) -> dict[str, Any]:
    """Per layer: median episodes/min, start-up, and the median per-round ratio to local."""
    by_round: dict[int, dict[str, float]] = {}
    cpu_by_round: dict[int, dict[str, float]] = {}
    for m in measurements:
        by_round.setdefault(m["round"], {})[m["layer"]] = m["episodes_per_minute"]
        cpu_by_round.setdefault(m["round"], {})[m["layer"]] = m["cpu_s_per_episode"]
    summary = {}
    for layer in layers:
        mine = [m for m in measurements if m["layer"] == layer]
        ratios = [r[layer] / r["local"] for r in by_round.values() if "local" in r and layer in r]
        cpu_ratios = [r[layer] / r["local"] for r in cpu_by_round.values()
                      if "local" in r and layer in r]
        summary[layer] = {
            "episodes_per_minute": median(m["episodes_per_minute"] for m in mine),
            "cpu_s_per_episode": median(m["cpu_s_per_episode"] for m in mine),
            "cpu_ratio_to_local": median(cpu_ratios),
            "startup_s": median(m["startup_s"] for m in mine),
            "ratio_to_local": median(ratios),
            "load_1m": median(m["load_1m"] for m in mine),
            "errors": sum(m["errors"] for m in mine),
        }
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 12 episodes per layer")
    parser.add_argument("--layers", default="local,isolated,ray",
                        help=f"comma-separated layers of {', '.join(LAYERS)}")
    parser.add_argument("--task", default="fsm:shop/open_mug", help="task id every layer runs")
    parser.add_argument("--episodes", type=int, default=None, help="timed episodes per measurement")
    parser.add_argument("--concurrency", type=int, default=2, help="episodes at once, every layer")
    parser.add_argument("--rounds", type=int, default=None, help="measurements per layer")
    parser.add_argument("--out", default=None, help="JSON results path")
    args = parser.parse_args(argv)
    layers = [name.strip() for name in args.layers.split(",") if name.strip()]
    unknown = [name for name in layers if name not in LAYERS]
    if unknown:
        parser.error(f"expected layers of {', '.join(LAYERS)}, got {', '.join(unknown)}")
    if "local" not in layers:
        layers.insert(0, "local")  # every ratio is to local, measured in the same round
    episodes = args.episodes or (12 if args.quick else 40)
    rounds = args.rounds or (1 if args.quick else 3)
    result = asyncio.run(run(layers, task=args.task, episodes=episodes,
                             concurrency=args.concurrency, rounds=rounds))
    rows = [[name, fmt(s["episodes_per_minute"], 1), fmt(s["ratio_to_local"], 2),
             fmt(s["cpu_s_per_episode"], 2), fmt(s["cpu_ratio_to_local"], 2),
             fmt(s["startup_s"], 1, " s"), fmt(s["load_1m"], 1), str(s["errors"])]
            for name, s in result["summary"].items()]
    print_table(f"episodes per minute at concurrency {args.concurrency} ({args.task}, oracle)",
                ["layer", "episodes/min", "ratio to local", "CPU s/episode", "CPU ratio",
                 "start-up", "load 1m", "errors"], rows)
    path = write_results("bench_layers", result, args.out, quick=args.quick)
    console.print(f"results: {path}")
    return result


if __name__ == "__main__":
    main()
