"""Issue 3's benchmark: verified FSM-site trajectories per hour, reset time, jump vs replay.

    .venv/bin/python -m benchmarks.bench_fsm [--quick]

- Throughput: the oracle agent (``env.oracle_action()``, i.e. ``FSMTask.cheat``) plays the
  ``fsm`` suite's tasks of every curated library site (one per goal, from the initial
  state) in real Chromium: ``AsyncEnv`` + ``BrowserSandbox`` + ``FSMTask`` on one
  ``LocalProvider`` and one ``SiteServer`` (through a ``LocalSiteClient``), N episodes at once. A trajectory counts as
  verified when the goal is reached, every step fired a transition on a shortest path,
  and every step returned a screenshot. Rate = verified / wall time x 3600.
  Each concurrency runs in two modes, interleaved: ``kept`` (the default: a new episode
  opens its session in the previous episode's page, ``FSMTask(reuse_page=True)``) and
  ``fresh`` (a new browser context per episode, ``reuse_page=False``).
- Reset: ``env.reset`` wall time of those episodes (session + page + first screenshot).
- Jump vs replay, for states on oracle paths at several depths: in the browser (reset, then
  ``FSMTask.jump`` + a screenshot, the store's restore path, vs reset + re-executing the
  path's actions through ``env.step``), and in the server alone (``jump`` vs re-applying
  the path's UI events).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from rich.progress import Progress

from benchmarks.common import (
    capture,
    console,
    fmt,
    median,
    percentile,
    print_table,
    ratio,
    write_results,
)
from fsm_sites.library import list_sites, load_site
from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from harness.env import AsyncEnv
from harness.tasks.fsm import FSMTask, goal_tasks
from sandboxes.browser.config import BrowserConfig
from sandboxes.providers import LocalProvider

TARGET_PER_HOUR = 5000
TARGET_RESET_MS = 100


def library_tasks(per_site: int | None) -> list[Any]:
    """The fsm suite's goal tasks of every curated site (``per_site`` spread over depths)."""
    tasks = []
    for site in list_sites():
        site_tasks = goal_tasks(load_site(site))
        if per_site is not None and len(site_tasks) > per_site:
            step = len(site_tasks) / per_site
            site_tasks = [site_tasks[int(i * step)] for i in range(per_site)]
        tasks.extend(site_tasks)
    return tasks


def fsm_env(task: Any, sites: LocalSiteClient, sandbox: Any, **task_options: Any) -> AsyncEnv:
    """An env for one goal task on the benchmark's site server (the task is handed its site
    client, so the env's own ``TaskResources`` never start a server)."""
    return AsyncEnv(FSMTask([task], sites, **task_options), sandbox)


async def oracle_episode(env: AsyncEnv, seed: int) -> dict[str, Any]:
    """One oracle episode; its reset time, steps, verdicts, actions and whether it verifies."""
    start = time.perf_counter()
    obs, _ = await env.reset(seed=seed)
    reset_s = time.perf_counter() - start
    shots, actions, verdicts, success = [obs.screenshot], [], [], False
    for _ in range(env.max_steps):
        action = await env.oracle_action()
        if action is None:
            break
        obs, _, terminated, truncated, info = await env.step(action)
        shots.append(obs.screenshot)
        actions.append(action)
        # The same rule as `cua tasks synth`'s verification (harness.fsm_tasks_cli.verify_one):
        # a step that sent events must lie on a shortest path; a preparatory step (focusing a
        # field before typing, the final Done) sends none and is allowed.
        verdicts.append(info.verdict if env.task.step_events[-1] else None)
        success = info.success
        if terminated or truncated:
            break
    moving = [v for v in verdicts if v is not None]
    verified = (success and bool(moving) and all(shot for shot in shots)
                and all(v.transition_fired and v.on_shortest_path for v in moving))
    return {"task": env.task_id, "seed": seed, "reset_s": reset_s, "steps": len(actions),
            "verified": verified, "success": success, "actions": actions,
            "states": [v.state_after for v in moving],
            "moving_index": [i for i, v in enumerate(verdicts) if v is not None],
            "screenshot_bytes": sum(len(s) for s in shots)}


MODES = {"kept": True, "fresh": False}  # mode -> FSMTask(reuse_page=...)


async def throughput(provider: LocalProvider, sites: LocalSiteClient, tasks: list[Any], concurrency: int,
                     seconds: float, progress: Progress, mode: str) -> dict[str, Any]:
    """Oracle episodes over ``tasks`` (cycled, new layout seed per lap) for ``seconds``."""
    episodes: list[dict[str, Any]] = []
    failures: list[str] = []
    counter = iter(range(10**9))
    bar = progress.add_task(f"oracle c{concurrency} {mode}", total=None)
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        sandbox = await provider.new_browser()
        while time.perf_counter() < deadline:
            k = next(counter)
            task = tasks[k % len(tasks)]
            env = fsm_env(task, sites, sandbox, reuse_page=MODES[mode])
            try:
                episodes.append(await oracle_episode(env, seed=k // len(tasks)))
            except Exception as exc:  # counted: an unverifiable episode is a finding
                failures.append(f"{task.site}/{task.id}: {type(exc).__name__}: {str(exc)[:160]}")
            finally:
                await env.close()
            progress.advance(bar)
        await sandbox.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - start
    progress.remove_task(bar)
    verified = sum(e["verified"] for e in episodes)
    steps = sum(e["steps"] for e in episodes)
    resets = [e["reset_s"] * 1000 for e in episodes]
    return {
        "concurrency": concurrency, "mode": mode, "wall_s": wall, "episodes": len(episodes), "verified": verified,
        "failures": failures[:10], "failed": len(failures), "steps": steps,
        "verified_per_hour": verified / wall * 3600, "steps_per_s": steps / wall,
        "reset_ms_p50": median(resets), "reset_ms_p90": percentile(resets, 90),
        "unverified": [f"{e['task']} seed {e['seed']}" for e in episodes if not e["verified"]][:10],
        "screenshot_kb_per_step": (sum(e["screenshot_bytes"] for e in episodes)
                                   / max(1, steps + len(episodes)) / 1024),
    }


async def jump_vs_replay(provider: LocalProvider, sites: LocalSiteClient, tasks: list[Any],
                         repeats: int) -> list[dict[str, Any]]:
    """Per depth: browser jump vs browser replay, and server-only jump vs event replay."""
    server = sites.server
    deep = sorted((t for t in tasks if t.difficulty >= 3), key=lambda t: -t.difficulty)[:3]
    sandbox = await provider.new_browser()
    rows = []
    for task in deep:
        env = fsm_env(task, sites, sandbox)
        episode = await oracle_episode(env, seed=0)
        sid = env.task._session  # noqa: SLF001 - the benchmark needs the live session id
        events = [r.event for r in server.events(sid)]
        # replay re-executes every action up to the depth-th event-sending one
        ends = episode["moving_index"]
        for depth in sorted({1, len(ends) // 2, len(ends)} - {0}):
            target = episode["states"][depth - 1]
            jump_ms, replay_ms, srv_jump_us, srv_replay_us = [], [], [], []
            for _ in range(repeats):
                start = time.perf_counter()
                await env.reset(seed=0)
                sid = env.task._session  # noqa: SLF001
                await env.jump(target, steps=depth)  # the store's jump path (restore_node)
                jump_ms.append((time.perf_counter() - start) * 1000)
                assert server.state(sid).key() == target
                start = time.perf_counter()
                await env.reset(seed=0)
                for action in episode["actions"][: ends[depth - 1] + 1]:
                    await env.step(action)
                replay_ms.append((time.perf_counter() - start) * 1000)
                sid = env.task._session  # noqa: SLF001
                assert server.state(sid).key() == target, "replay did not reach the jumped-to state"
                start = time.perf_counter()
                server.reset(sid)
                server.jump(sid, target)
                srv_jump_us.append((time.perf_counter() - start) * 1e6)
                start = time.perf_counter()
                server.reset(sid)
                for event in events[:depth]:
                    server.send_event(sid, event)
                srv_replay_us.append((time.perf_counter() - start) * 1e6)
            rows.append({"task": f"{task.site}/{task.id}", "depth": depth,
                         "jump_ms": median(jump_ms), "replay_ms": median(replay_ms),
                         "server_jump_us": median(srv_jump_us), "server_replay_us": median(srv_replay_us)})
        await env.close()
    await sandbox.close()
    return rows


async def reset_paths(provider: LocalProvider, sites: LocalSiteClient, task: Any,
                      repeats: int) -> dict[str, Any]:
    """Where an FSM reset's time goes: the env's two reset paths (the session shown in the
    kept page; a fresh BrowserContext with route, CDP attach and page load), each with its
    first screenshot, against bare Playwright doing the same with no env around it."""
    host, server = provider.host, sites.server
    browser = await host.ensure_browser()
    viewport = {"width": host.config.viewport_width, "height": host.config.viewport_height}
    times: dict[str, list[float]] = {}

    def new_session() -> str:
        return server.create_session(task.site, goal=task.goal, start_state=task.start_state, seed=0).id

    async def shot(page: Any) -> None:
        cdp = await page.context.new_cdp_session(page)
        await capture(cdp, host.config, attempts=50)  # right after a load: not painted yet
        await cdp.detach()

    envs = {
        "env.reset, kept page (session shown in place + screenshot)": fsm_env(
            task, sites, await provider.new_browser()),
        "env.reset, fresh context (new context + load + screenshot)": fsm_env(
            task, sites, await provider.new_browser(), reuse_page=False),
    }
    for env in envs.values():
        await env.reset(seed=0)  # the first episode of a sandbox always opens a context
    kept = await browser.new_context(viewport=viewport)
    kept_page = await kept.new_page()
    for _ in range(repeats):
        for name, env in envs.items():
            start = time.perf_counter()
            await env.reset(seed=0)
            times.setdefault(name, []).append(time.perf_counter() - start)
        start = time.perf_counter()
        context = await browser.new_context(viewport=viewport)
        page = await context.new_page()
        await page.goto(server.session_url(new_session()), wait_until="domcontentloaded")
        await shot(page)
        times.setdefault("bare Playwright: new context + load + screenshot", []).append(time.perf_counter() - start)
        await context.close()
        start = time.perf_counter()
        await kept_page.goto(server.session_url(new_session()), wait_until="domcontentloaded")
        await shot(kept_page)
        times.setdefault("bare Playwright: same page, goto new session + screenshot", []).append(
            time.perf_counter() - start)
        start = time.perf_counter()
        new_session()
        times.setdefault("server only: create session", []).append(time.perf_counter() - start)
    await kept.close()
    for env in envs.values():
        await env.close()
        await env.sandbox.close()
    return {name: median(1000 * t for t in values) for name, values in times.items()}


def warm_up(server: SiteServer, tasks: list[Any]) -> dict[str, float]:
    """Build every site's state graph and every goal's distances once (ms per site), as a
    long-running server has; otherwise the first lap's resets would measure them."""
    spent: dict[str, float] = {}
    for task in tasks:
        start = time.perf_counter()
        session = server.create_session(task.site, goal=task.goal, start_state=task.start_state)
        session.distance(session.state)
        server.delete_session(session.id)
        spent[task.site] = spent.get(task.site, 0.0) + (time.perf_counter() - start) * 1000
    return spent


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tasks = library_tasks(2 if args.quick else None)
    specs = [load_site(site) for site in list_sites()]
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    config = BrowserConfig(image_format=args.image_format)
    async with SiteServer(specs) as server, LocalProvider(config) as provider:
        sites = LocalSiteClient(server)
        warm = warm_up(server, tasks)
        with Progress(console=console, transient=True) as progress:
            runs = []
            for _ in range(args.repeats):
                for c in concurrencies:
                    for mode in MODES:
                        runs.append(await throughput(provider, sites, tasks, c, args.seconds, progress, mode))
        jumps = await jump_vs_replay(provider, sites, tasks, 2 if args.quick else 3)
        paths = await reset_paths(provider, sites, tasks[0], 5 if args.quick else 10)
    return {"tasks": len(tasks), "sites": len(specs), "runs": runs, "jump_vs_replay": jumps,
            "reset_paths_ms": paths, "warm_up_ms_per_site": warm}


def report(result: dict[str, Any]) -> dict[str, Any]:
    cells: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in result["runs"]:
        cells.setdefault((r["concurrency"], r["mode"]), []).append(r)
    table = {f"c{c} {mode}": {
        "verified_per_hour": median(r["verified_per_hour"] for r in rs),
        "steps_per_s": median(r["steps_per_s"] for r in rs),
        "reset_ms_p50": median(r["reset_ms_p50"] for r in rs),
        "verified": sum(r["verified"] for r in rs), "episodes": sum(r["episodes"] for r in rs),
        "failed": sum(r["failed"] for r in rs)} for (c, mode), rs in sorted(cells.items())}
    print_table(f"oracle over {result['tasks']} tasks of {result['sites']} curated sites (medians)",
                ["cell", "verified traj/h", "steps/s", "reset ms p50", "verified/episodes", "errors"],
                [[name, fmt(s["verified_per_hour"], 0), fmt(s["steps_per_s"]), fmt(s["reset_ms_p50"]),
                  f"{s['verified']}/{s['episodes']}", str(s["failed"])] for name, s in table.items()])
    # kept / fresh, paired by run (runs alternate kept, fresh at each concurrency)
    runs = result["runs"]
    pairs: dict[int, list[float | None]] = {}
    for kept, fresh in zip(runs[::2], runs[1::2], strict=True):
        pairs.setdefault(kept["concurrency"], []).append(
            ratio(kept["verified_per_hour"], fresh["verified_per_hour"]))
    print_table("verified traj/h, kept page / fresh context (paired by run, median)",
                ["concurrency", "ratio"], [[str(c), fmt(median(v), 2)] for c, v in sorted(pairs.items())])
    summary = {name: s for name, s in table.items() if name.endswith(" kept")}
    print_table("restore a state: jump vs replay (medians)",
                ["task", "depth", "browser jump ms", "browser replay ms", "replay/jump",
                 "server jump us", "server replay us"],
                [[j["task"], str(j["depth"]), fmt(j["jump_ms"]), fmt(j["replay_ms"]),
                  fmt(ratio(j["replay_ms"], j["jump_ms"]), 2), fmt(j["server_jump_us"]),
                  fmt(j["server_replay_us"])] for j in result["jump_vs_replay"]])
    warm = result["warm_up_ms_per_site"]
    console.print(f"one-time warm-up (state graph + goal distances), ms per site: median "
                  f"{fmt(median(warm.values()))}, max {fmt(max(warm.values()))}")
    print_table("where an FSM reset's time goes (ms, medians)", ["path", "ms"],
                [[k, fmt(v)] for k, v in result["reset_paths_ms"].items()])
    best = max((s["verified_per_hour"] or 0 for s in summary.values()), default=0)
    resets = [s["reset_ms_p50"] for s in summary.values() if s["reset_ms_p50"] is not None]
    met = {"verified_per_hour_ge_5000": best >= TARGET_PER_HOUR,
           "reset_median_lt_100ms": bool(resets) and min(resets) < TARGET_RESET_MS}
    console.print(f"best verified trajectories/hour: {best:,.0f}; targets: {met}")
    return {"summary": summary, "cells": table, "targets": met, "best_verified_per_hour": best}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 tasks per site, short runs")
    parser.add_argument("--seconds", type=float, default=None, help="length of each throughput run")
    parser.add_argument("--concurrency", default=None, help="comma-separated episode concurrencies")
    parser.add_argument("--repeats", type=int, default=None, help="throughput runs per concurrency")
    parser.add_argument("--image-format", default="png", choices=("png", "jpeg"), help="screenshot encoding")
    parser.add_argument("--out", default=None, help="JSON results path (default: benchmarks/results/"
                        "<name>.json, or runs/bench-quick/<name>.json with --quick)")
    args = parser.parse_args(argv)
    args.seconds = args.seconds or (15.0 if args.quick else 40.0)
    args.concurrency = args.concurrency or ("1,4" if args.quick else "1,2,4")
    args.repeats = args.repeats or (1 if args.quick else 3)
    result = asyncio.run(run(args))
    summary = report(result)
    path = write_results("bench_fsm", {"args": vars(args), **summary, **result},
                         out=args.out, quick=args.quick)
    console.print(f"results: {path}")
    return summary


if __name__ == "__main__":
    main()
