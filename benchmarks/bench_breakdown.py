"""Where a MiniWoB step's and reset's time goes, in this env and in the bare floor.

    .venv/bin/python -m benchmarks.bench_breakdown [--quick] [--rounds N] [--steps N]

- **Step parts.** The env's step (``AsyncEnv.step``: execute = the click + the navigation
  watcher's flush, the task's reward read, the screenshot) timed whole, and the same calls
  timed one by one; beside them the floor (``page.mouse.click`` + ``Page.captureScreenshot``)
  and the floor with the reward read, on the same page. The systems take turns step by step
  (the order rotating); a step that fits in one 60 Hz frame takes about 17 ms, one that
  misses the frame about 33 ms, so the share of steps under 25 ms is reported too.
- **Reset parts.** A fresh MiniWoB reset done step by step with the sandbox's own parts
  (close the old context, new context with its route, new page, CDP session + watcher,
  load, episode start, screenshot); ``env.reset`` whole with ``prepare_next`` off and on
  (each after an episode of each ``--lengths`` steps, during which the next context is
  prepared: the reset is hidden once the episode outlasts the preparation); and the floor's in-page restart (``core.startEpisodeReal()`` in the same page +
  a screenshot: what an env without per-episode isolation pays).
- **Steps right after a reset.** The first steps of each episode with ``prepare_next`` off
  and on: what preparing the next context meanwhile costs the running episode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from itertools import product
from typing import Any

from benchmarks.bench_env import click_points
from benchmarks.common import capture, console, fmt, median, print_table, ratio, write_results
from harness.actions import Click
from harness.env import AsyncEnv
from harness.resources import TaskResources
from harness.tasks.miniwob import STATE_JS, MiniWoBTask
from sandboxes.browser.actions import perform
from sandboxes.browser.config import BrowserConfig
from sandboxes.browser.context import EpisodeContext
from sandboxes.browser.sandbox import BrowserSandbox
from sandboxes.providers import LocalProvider

ONE_FRAME_S = 0.025  # between one 60 Hz frame (16.7 ms) and two (33.3 ms)
Timer = dict[str, list[float]]


async def timed(times: Timer, name: str, op: Awaitable[Any]) -> Any:
    start = time.perf_counter()
    result = await op
    times.setdefault(name, []).append(time.perf_counter() - start)
    return result


async def open_env(provider: LocalProvider, resources: TaskResources, task: str,
                   prepare_next: bool) -> AsyncEnv:
    mw_task = MiniWoBTask(task)
    w, h = mw_task.sandbox_request.viewport or (0, 0)
    sandbox = await provider.new_browser(viewport_width=w, viewport_height=h,
                                         prepare_next=prepare_next)
    return AsyncEnv(mw_task, sandbox, resources=resources, max_steps=1_000_000)


async def step_parts(env: AsyncEnv, points: list[tuple[int, int]], rounds: int) -> Timer:
    """Steps of the env (whole and in parts) and of the floors, interleaved per round."""
    sandbox = env.sandbox
    assert isinstance(sandbox, BrowserSandbox)
    await env.reset(seed=1000)
    await sandbox.evaluate("core.clearTimer()")
    times: Timer = {}

    async def env_step(x: int, y: int) -> None:
        await timed(times, "env.step", env.step(Click(x=x, y=y)))

    async def env_parts(x: int, y: int) -> None:
        episode = sandbox._episode  # noqa: SLF001 - the benchmark times the sandbox's own parts
        assert episode is not None
        start = time.perf_counter()
        await timed(times, "  execute: click", perform(episode.page, Click(x=x, y=y)))
        await timed(times, "  execute: navigation flush", episode.nav.after_action("click"))
        await timed(times, "  validate: reward read", env.task.validate(sandbox, Click(x=x, y=y)))
        await timed(times, "  screenshot", sandbox.screenshot())
        times.setdefault("env parts, summed", []).append(time.perf_counter() - start)

    async def floor(x: int, y: int, judged: bool) -> None:
        episode = sandbox._episode  # noqa: SLF001
        assert episode is not None
        start = time.perf_counter()
        await episode.page.mouse.click(x, y)
        if judged:
            await episode.page.evaluate(STATE_JS)
        await capture(episode.cdp, sandbox.config)
        name = "floor + reward read" if judged else "floor: click + capture"
        times.setdefault(name, []).append(time.perf_counter() - start)

    systems: list[Callable[[int, int], Awaitable[None]]] = [
        env_step, env_parts, lambda x, y: floor(x, y, False), lambda x, y: floor(x, y, True)]
    # Step by step, the systems taking turns (the order rotating), so that load that comes
    # and goes on a shared machine hits them alike.
    for rnd in range(rounds):
        for k, (x, y) in enumerate(points):
            turn = (rnd + k) % len(systems)
            for system in systems[turn:] + systems[:turn]:
                await system(x, y)
    return times


async def reset_parts(env: AsyncEnv, browser_config: BrowserConfig, repeats: int,
                      episode_steps: int) -> Timer:
    """A fresh reset done part by part with the sandbox's own pieces, and the floor's
    in-page restart; each after an episode of ``episode_steps`` steps."""
    sandbox = env.sandbox
    assert isinstance(sandbox, BrowserSandbox)
    task = env.task
    assert isinstance(task, MiniWoBTask)
    url = f"{await env.resources.miniwob_url()}miniwob/{task.name}.html"
    await env.reset(seed=0)
    times: Timer = {}
    for rep in range(repeats):
        await play(env, episode_steps)
        old = sandbox._episode  # noqa: SLF001
        assert old is not None
        start = time.perf_counter()
        await timed(times, "  close the old context", old.close(5.0))
        browser = await sandbox.host.ensure_browser()
        context = await timed(times, "  new context (+ route)", browser.new_context(
            viewport={"width": browser_config.viewport_width,
                      "height": browser_config.viewport_height}, device_scale_factor=1))
        page = await timed(times, "  new page", context.new_page())
        await context.close()
        episode = await timed(times, "  context + page + CDP session + watcher (as the sandbox)",
                              EpisodeContext.open(browser, sandbox.config, old.allowed,
                                                  sandbox.host.generation))
        sandbox._episode = episode  # noqa: SLF001
        await timed(times, "  load (goto, DOMContentLoaded)", episode.page.goto(url))
        await timed(times, "  ready wait + episode start", task.start_episode(sandbox, seed=rep))
        await timed(times, "  screenshot", sandbox.screenshot())
        times.setdefault("fresh reset, parts summed", []).append(time.perf_counter() - start)
        del page
        await sandbox.evaluate("core.clearTimer()")
        await timed(times, "floor: in-page restart + screenshot", restart_in_page(sandbox, rep))
    return times


async def restart_in_page(sandbox: BrowserSandbox, seed: int) -> None:
    """What an env without per-episode isolation pays: a new episode in the same page."""
    await sandbox.evaluate(f"Math.seedrandom({json.dumps(seed)}); core.setDataMode('train');"
                           " core.startEpisodeReal(); true")
    await sandbox.screenshot()


async def play(env: AsyncEnv, steps: int, times: Timer | None = None, first: int = 0,
               label: str = "") -> None:
    """``steps`` clicks in the instruction box (they never end an episode); the first
    ``first`` of them timed into ``times``."""
    await env.sandbox.evaluate("core.clearTimer()")  # type: ignore[attr-defined]
    for k, (x, y) in enumerate(click_points(steps, seed=7)):
        op = env.step(Click(x=x, y=y))
        await (timed(times, f"first {first} steps after a reset, {label}", op)
               if times is not None and k < first else op)


async def env_resets(envs: dict[bool, AsyncEnv], repeats: int, lengths: list[int]) -> Timer:
    """Episodes of each length (steps) with prepare_next off and on, interleaved: the reset
    after such an episode, the first steps after a reset, and the whole episode."""
    times: Timer = {}
    for env in envs.values():
        for seed in range(2):  # a sandbox prepares a context once a URL repeats
            await env.reset(seed=seed)
            await play(env, 5)
    for rep, length in product(range(repeats), lengths):
        for prepare_next, env in list(envs.items())[rep % 2:] + list(envs.items())[:rep % 2]:
            label = f"prepare_next {'on' if prepare_next else 'off'}"
            start = time.perf_counter()
            await timed(times, f"env.reset after {length} steps, {label}", env.reset(seed=rep))
            await play(env, length, times, min(10, length), label)
            times.setdefault(f"episode: reset + {length} steps, {label}", []).append(
                time.perf_counter() - start)
    return times


async def run(args: argparse.Namespace) -> dict[str, Any]:
    config = BrowserConfig(image_format="png")
    points = click_points(args.steps, seed=0)
    result: dict[str, Any] = {"tasks": {}}
    async with TaskResources() as resources, LocalProvider(config) as provider:
        for task in args.tasks:
            envs = {flag: await open_env(provider, resources, task, flag) for flag in (False, True)}
            steps = await step_parts(envs[False], points, args.rounds)
            resets = await env_resets(envs, args.repeats, args.lengths)
            parts = await reset_parts(envs[False], envs[False].sandbox.config,  # type: ignore[attr-defined]
                                      args.repeats, max(args.lengths))
            for env in envs.values():
                await env.close()
                await env.sandbox.close()  # type: ignore[attr-defined]
            result["tasks"][task] = {"steps": summarize(steps), "resets": summarize({**resets, **parts})}
    return result


def summarize(times: Timer) -> dict[str, dict[str, float | None]]:
    return {name: {"ms_p50": 1000 * (median(values) or 0.0),
                   "ms_mean": 1000 * sum(values) / len(values),
                   "one_frame_share": sum(v < ONE_FRAME_S for v in values) / len(values),
                   "n": len(values)} for name, values in times.items()}


def report(result: dict[str, Any]) -> None:
    for task, parts in result["tasks"].items():
        steps = parts["steps"]
        print_table(f"{task}: where a step's time goes (medians)", ["part", "ms", "steps under 25 ms"],
                    [[name, fmt(s["ms_p50"], 2), fmt(100 * s["one_frame_share"], 0, "%")]
                     for name, s in steps.items()])
        env, floor = steps["env.step"], steps["floor: click + capture"]
        judged = steps["floor + reward read"]
        console.print(f"steps/s, env / floor: {fmt(ratio(floor['ms_mean'], env['ms_mean']), 2)} "
                      f"(env / floor + reward read: {fmt(ratio(judged['ms_mean'], env['ms_mean']), 2)})")
        print_table(f"{task}: where a reset's time goes (medians)", ["part", "ms"],
                    [[name, fmt(s["ms_p50"], 1)] for name, s in parts["resets"].items()])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one task, fewer rounds")
    parser.add_argument("--tasks", default=None, help="comma-separated MiniWoB task names")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds of steps")
    parser.add_argument("--steps", type=int, default=None, help="steps per system per round")
    parser.add_argument("--repeats", type=int, default=None, help="resets per kind")
    parser.add_argument("--lengths", default="5,10,20,40",
                        help="comma-separated episode lengths (steps) before the timed resets")
    parser.add_argument("--out", default=None, help="JSON results path")
    args = parser.parse_args(argv)
    args.tasks = (args.tasks or ("click-button" if args.quick else "click-button,click-link")).split(",")
    args.rounds = args.rounds or (2 if args.quick else 4)
    args.steps = args.steps or (20 if args.quick else 40)
    args.repeats = args.repeats or (4 if args.quick else 8)
    args.lengths = [int(n) for n in args.lengths.split(",")]
    result = asyncio.run(run(args))
    report(result)
    path = write_results("bench_breakdown", {"args": vars(args), **result}, out=args.out, quick=args.quick)
    console.print(f"results: {path}")
    return result


if __name__ == "__main__":
    main()
