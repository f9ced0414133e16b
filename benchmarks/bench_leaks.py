"""Issue 10's leak check: many episodes in isolated sandboxes leave nothing behind.

    .venv/bin/python -m benchmarks.bench_leaks [--episodes 500] [--sandbox-episodes 100] [--quick]
    .venv/bin/python -m benchmarks.bench_leaks --task desktop:tk-settings-password --episodes 50

Runs ``--episodes`` oracle episodes of a short FSM task (``fsm:shop/open_mug``: a reset and
two steps, so the run is about episodes, not steps; ``--task`` picks another, e.g. a desktop
task, whose Xvfb, openbox and app run in the jail) through ``--provider isolated`` at
``--concurrency``, every sandbox closed (its Chromium, jail and namespace) after
``--sandbox-episodes`` episodes and a fresh one made. Every ``--sample-every`` episodes (or
at the first episode after it when a sandbox is being replaced) it samples the memory of
the whole process tree (this Python process, Playwright's drivers, bubblewrap and every
Chromium process: RSS and PSS from /proc) and counts its sandbox processes.

Memory growth is the mean of the second half's samples over the first half's. A
Chromium's memory climbs over its life and drops when it is replaced, so with the
defaults (500 episodes, 2 at once, 125 per sandbox) each half is exactly one life of the
sandboxes, and the two halves compare like with like; the last sample over the first
is reported too. After the provider is closed it lists what is left
(``sandboxes.leftovers``): processes, namespaces, veth ends, service addresses, homes
and cgroups. ``tests/harness/test_isolation_leaks.py`` runs the
same function and asserts on it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

from benchmarks.common import console, print_table, write_results
from harness.agents.registry import make_agent
from harness.isolated_envs import IsolatedEnvs
from harness.records import EpisodeSpec
from harness.runner import EpisodeRunner, RunnerConfig
from sandboxes.leftovers import descendants, leftovers, sandbox_processes

TASK = "fsm:shop/open_mug"


def specs(episodes: int, seeds: int | None, task: str = TASK) -> list[EpisodeSpec]:
    """Episode i seeded i, or i modulo ``seeds``."""
    return [EpisodeSpec(task_id=task, seed=i % seeds if seeds else i, index=i)
            for i in range(episodes)]


def tree_memory_mb() -> dict[str, float]:
    """RSS and PSS (MiB) of this process and everything under it, and its own RSS."""
    pids = [os.getpid(), *(info.pid for info in descendants(os.getpid()))]
    rss = pss = own = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                        own += int(line.split()[1]) if pid == os.getpid() else 0
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            continue
    return {"tree_rss_mb": rss / 1024, "tree_pss_mb": pss / 1024, "python_rss_mb": own / 1024}


async def leak_run(episodes: int = 500, *, concurrency: int = 2, sandbox_episodes: int | None = 125,
                   sample_every: int = 25, seeds: int | None = None,
                   progress: bool = False, task: str = TASK) -> dict[str, Any]:
    """Run the episodes and return the samples, growth and leftovers (see the docstring).

    ``seeds``: cycle over this many seeds (None: every episode its own seed)."""
    before = leftovers()
    # What was there before the run (another test's zombies, say) is not this run's.
    old = {int(p.split()[0]) for p in before.processes}
    envs = IsolatedEnvs(sandbox_episodes=sandbox_episodes)
    samples: list[dict[str, Any]] = []
    done = {"episodes": 0}

    def on_episode(_record: Any) -> None:
        done["episodes"] += 1
        # Sampled once every slot has its sandbox: not while one is being replaced.
        due = done["episodes"] >= sample_every * (len(samples) + 1)
        if due and envs.sandboxes.open_sandboxes == concurrency:
            live = [p for p in sandbox_processes() if p.pid not in old]
            samples.append({"episode": done["episodes"], "processes": len(live),
                            "chromium": sum(p.comm == "chromium" for p in live),
                            "xvfb": sum(p.comm == "Xvfb" for p in live),
                            "zombies": sum(p.state == "Z" for p in live),
                            "zombie_processes": [f"{p.pid} {p.comm} parent {p.ppid}"
                                                 for p in live if p.state == "Z"],
                            **tree_memory_mb()})

    config = RunnerConfig(concurrency=concurrency, progress=progress, save_screenshots=False)
    runner = EpisodeRunner(make_agent("oracle"), config, envs=envs, on_episode=on_episode)
    start = time.perf_counter()
    try:
        records = await runner.run(specs(episodes, seeds, task))
    finally:
        await envs.close()
    wall = time.perf_counter() - start
    after = leftovers()
    first, last = samples[0], samples[-1]
    return {
        "task": task, "episodes": episodes, "concurrency": concurrency, "sandbox_episodes": sandbox_episodes,
        "succeeded": sum(r.success for r in records),
        "errors": sum(r.error is not None for r in records),
        "wall_seconds": wall, "episodes_per_minute": 60 * episodes / wall,
        "samples": samples,
        "pss_growth": halves_growth(samples, episodes, "tree_pss_mb"),
        "rss_growth": halves_growth(samples, episodes, "tree_rss_mb"),
        "python_rss_growth": halves_growth(samples, episodes, "python_rss_mb"),
        "pss_last_over_first": last["tree_pss_mb"] / first["tree_pss_mb"] - 1,
        "python_rss_last_over_first": last["python_rss_mb"] / first["python_rss_mb"] - 1,
        "seeds": seeds,
        "leftover_processes": [p for p in after.processes if int(p.split()[0]) not in old],
        "leftover_other": {k: list(getattr(after, k)) for k in
                           ("namespaces", "interfaces", "service_addresses", "homes", "cgroups",
                            "display_links")},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def halves_growth(samples: list[dict[str, Any]], episodes: int, key: str) -> float:
    """Mean of ``key`` over the second half's samples, over the first half's, minus 1."""
    first = [s[key] for s in samples if s["episode"] <= episodes // 2]
    second = [s[key] for s in samples if s["episode"] > episodes // 2]
    return statistics.fmean(second) / statistics.fmean(first) - 1


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 episodes")
    parser.add_argument("--episodes", type=int, default=None, help="episodes in all (default 500)")
    parser.add_argument("--concurrency", type=int, default=2, help="episodes at once")
    parser.add_argument("--sandbox-episodes", type=int, default=125,
                        help="episodes per sandbox before a fresh one (0: never recycle)")
    parser.add_argument("--sample-every", type=int, default=25, help="episodes between samples")
    parser.add_argument("--seeds", type=int, default=None,
                        help="cycle over this many seeds (default: a seed per episode)")
    parser.add_argument("--task", default=TASK, help=f"the task of every episode (default {TASK})")
    parser.add_argument("--out", default=None, help="JSON results path")
    args = parser.parse_args(argv)
    episodes = args.episodes or (100 if args.quick else 500)
    load_before = [round(x, 2) for x in os.getloadavg()]
    result = asyncio.run(leak_run(episodes, concurrency=args.concurrency,
                                  sandbox_episodes=args.sandbox_episodes or None,
                                  sample_every=args.sample_every, seeds=args.seeds,
                                  progress=True, task=args.task))
    result["load_average_before"] = load_before
    rows = [[str(s["episode"]), str(s["processes"]), str(s["chromium"]), str(s["xvfb"]), str(s["zombies"]),
             f"{s['tree_rss_mb']:.0f}", f"{s['tree_pss_mb']:.0f}", f"{s['python_rss_mb']:.0f}"]
            for s in result["samples"]]
    print_table("process tree while episodes run", ["episode", "sandbox procs", "chromium", "Xvfb",
                "zombies", "tree RSS MiB", "tree PSS MiB", "python RSS MiB"], rows)
    console.print(f"{result['succeeded']}/{episodes} succeeded, {result['errors']} errors, "
                  f"{result['episodes_per_minute']:.0f} episodes/min; PSS growth "
                  f"{100 * result['pss_growth']:+.1f}% (second half over first; last sample over "
                  f"first {100 * result['pss_last_over_first']:+.1f}%), RSS "
                  f"{100 * result['rss_growth']:+.1f}%, python RSS "
                  f"{100 * result['python_rss_growth']:+.1f}%; "
                  f"left behind: {result['leftover_processes'] or 'no process'}, "
                  f"{result['leftover_other']}; load {load_before} -> {result['load_average']}")
    path = write_results("bench_leaks", result, args.out, quick=args.quick)
    console.print(f"results: {path}")
    return result


if __name__ == "__main__":
    main()
