"""Where an FSM step's time goes, against the bare click + screenshot floor in the same run.

    .venv/bin/python -m benchmarks.bench_fsm_step [--quick] [--laps N] [--modes default,post] [--out PATH]

The oracle plays the ``fsm`` suite's goal tasks of every curated site (as ``bench_fsm``,
one layout seed per lap) through ``AsyncEnv`` + ``BrowserSandbox`` + ``FSMTask`` with a
kept page, each task once per mode (``MODES``: ``default``, the default task, which takes
the page's events in its settle and hands the page the answer (the hand-over; on an older
tree the page posts them); ``post``, ``FSMTask(take_events=False)``, whose page posts its
events; ``prefetch``, ``FSMTask(prefetch=True)``), the page showing the page the answer
carries, the order rotating. After every oracle step the **floor**
takes one step on its own page (bare Playwright in its own context, an FSM page of the same
server): ``page.mouse.click`` on a point that sends no event + ``Page.captureScreenshot``
with the env's capture settings, which is ``bench_env``'s floor. Each env step and each
floor step starts after a random pause of up to one 60 Hz frame (``--no-jitter``: none), so
that neither starts at a phase of the frame clock the other's length sets (a capture waits
for a frame). Each step of the env is
timed either whole (``env.step``) or, every other step, in its parts, the same calls one by one:

- click: ``page.mouse.click`` (the page's event handler runs inside it: a prefetched
  page is swapped in here);
- flush: the navigation watcher's round trip after the action;
- settle: ``FSMTask`` waits until the page shows the state of the last event (its
  ``__fsm.idle``: the event's POST and answer, and a swap if the answer carries a page;
  with the hand-over, the event applied here and its answer handed to the page);
- verdict: the rest of ``FSMTask.validate`` (the session's events and their verdicts);
- screenshot: ``Page.captureScreenshot`` (it waits for the next rendered frame).

Inside the page (``window.__fsm.last``, when the tree has it): whether the event's page
was prefetched and swapped in locally, the swap's time, the event's round trip (answer)
and when its answer's page was in (shown). In the server: the event handler's
(``page_event``, which both ways call) and the prefetch handler's time. Steps are grouped by kind
(an event with a prefetched page, an event posted and answered with a page, no event);
the env/floor ratio is paired per step (each env step over the floor step right after it),
median taken. Runs on any tree (``PYTHONPATH``): on one without the prefetch the in-page
and prefetch columns stay empty.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks.bench_fsm import library_tasks, warm_up
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
from harness.tasks.fsm import FSMTask
from sandboxes.browser.actions import perform
from sandboxes.browser.config import BrowserConfig
from sandboxes.browser.sandbox import BrowserSandbox
from sandboxes.providers import LocalProvider

#: FSMTask options of each mode: the default task (on a tree with the hand-over, the task
#: takes the page's events in its settle), the page posting its events (``take_events=False``,
#: on a tree that has the option), the prefetch.
MODES: dict[str, dict[str, Any]] = {"default": {}, "post": {"take_events": False},
                                    "prefetch": {"prefetch": True}}
ONE_FRAME_MS = 25.0  # between one 60 Hz frame (16.7 ms) and two (33.3 ms)
FRAME_S = 1 / 60
_LAST = "(() => { const f = window.__fsm; return f && f.last ? f.last : null; })()"
Samples = dict[str, list[float]]


def timed_call(call: Callable[..., Any], into: list[float]) -> Callable[..., Any]:
    """``call`` (a plain function) that appends its time (ms) to ``into``."""
    def wrapper(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(*args)
        finally:
            into.append((time.perf_counter() - start) * 1000)
    return wrapper


def timed_handler(handler: Callable[[Any], Awaitable[Any]], into: list[float]) -> Callable[[Any], Awaitable[Any]]:
    """``handler`` that appends its time (ms) to ``into``."""
    async def wrapper(request: Any) -> Any:
        start = time.perf_counter()
        try:
            return await handler(request)
        finally:
            into.append((time.perf_counter() - start) * 1000)
    return wrapper


#: The page-change floor's click handler (capture phase, before site.js sees the click):
#: swap in the other of two pages of the site, parsed from HTML the page already holds.
_CHANGE_ON_CLICK = """([pages, x, y]) => { let shown = 0;
  document.addEventListener("click", (e) => {
    if (Math.abs(e.clientX - x) > 1 || Math.abs(e.clientY - y) > 1) return;
    e.stopPropagation(); e.preventDefault(); shown ^= 1;
    document.body.replaceWith(new DOMParser().parseFromString(pages[shown], "text/html").body);
  }, true); return true; }"""


class Floor:
    """Bare Playwright on an FSM page: a click that sends nothing + a CDP screenshot. Its
    page-change twin (``change_step``), on a page of its own, clicks a point whose handler
    swaps in another page of the same site from HTML the page holds (no server, no
    harness): what showing a new page costs the browser at least."""

    def __init__(self, provider: LocalProvider, server: SiteServer, task: Any) -> None:
        self.provider, self.server, self.task = provider, server, task
        self.config = provider.host.config

    async def open(self) -> None:
        browser = await self.provider.host.ensure_browser()
        viewport = {"width": self.config.viewport_width, "height": self.config.viewport_height}
        self.context = await browser.new_context(viewport=viewport)
        self.page = await self.context.new_page()
        session = self.server.create_session(self.task.site, goal=self.task.goal, seed=0)
        await self.page.goto(self.server.session_url(session.id), wait_until="domcontentloaded")
        self.cdp = await self.context.new_cdp_session(self.page)
        await capture(self.cdp, self.config, attempts=50)
        # Two pages of the site: the start page, and the page after the oracle's first event.
        pages = [self.server.render(session)]
        start = session.state
        other = next(s for s in session.machine.graphs.graph().states if s.page != start.page)
        self.server.jump(session.id, other.key())
        pages.append(self.server.render(session))
        self.server.jump(session.id, start.key())
        self.change_page = await self.context.new_page()
        await self.change_page.goto(self.server.session_url(session.id), wait_until="domcontentloaded")
        x, y = 3, self.config.viewport_height - 3
        await self.change_page.evaluate(_CHANGE_ON_CLICK, [pages, x, y])
        self.change_cdp = await self.context.new_cdp_session(self.change_page)
        await capture(self.change_cdp, self.config, attempts=50)

    async def step(self, into: Samples) -> float:
        start = time.perf_counter()
        await self.page.mouse.click(3, self.config.viewport_height - 3)
        clicked = time.perf_counter()
        await capture(self.cdp, self.config)
        end = time.perf_counter()
        into.setdefault("floor: click", []).append((clicked - start) * 1000)
        into.setdefault("floor: screenshot", []).append((end - clicked) * 1000)
        return (end - start) * 1000

    async def change_step(self, into: Samples) -> float:
        """A click that shows the other page + a CDP screenshot, ms."""
        start = time.perf_counter()
        await self.change_page.mouse.click(3, self.config.viewport_height - 3)
        await capture(self.change_cdp, self.config)
        end = time.perf_counter()
        into.setdefault("page-change floor", []).append((end - start) * 1000)
        return (end - start) * 1000

    async def close(self) -> None:
        await self.context.close()


async def parts_step(env: AsyncEnv, action: Any, into: Samples) -> tuple[float, bool]:
    """One env step in its parts (what ``AsyncEnv.step`` calls, one by one); the total ms
    and whether the episode is done."""
    sandbox, task = env.sandbox, env.task
    assert isinstance(sandbox, BrowserSandbox) and isinstance(task, FSMTask)
    episode = sandbox._episode  # noqa: SLF001 - the benchmark times the sandbox's own parts
    assert episode is not None
    sites, sid = task._require()  # noqa: SLF001
    marks = [time.perf_counter()]
    await perform(episode.page, action)
    marks.append(time.perf_counter())
    # The flush carries the task's read, as in ``BrowserSandbox.execute``.
    sandbox._read_value = await episode.nav.after_action(action.type, sandbox._after_read)  # noqa: SLF001
    marks.append(time.perf_counter())
    await task._shown(sandbox, sites, sid)  # noqa: SLF001 - the settle, timed apart
    marks.append(time.perf_counter())
    task._shown = _settled  # type: ignore[method-assign]  # validate's own settle is done already
    try:
        validation = await task.validate(sandbox, action)  # the events and their verdicts
    finally:
        del task._shown
    marks.append(time.perf_counter())
    await sandbox.screenshot()
    marks.append(time.perf_counter())
    for name, begin, end in zip(("click", "flush", "settle", "verdict", "screenshot"), marks, marks[1:],
                                strict=False):
        into.setdefault(name, []).append((end - begin) * 1000)
    return (marks[-1] - marks[0]) * 1000, validation.done


async def _settled(*_: Any) -> None:
    return None


def kind_of(task: FSMTask, last: Any, before: Any) -> str:
    """The step's kind: no event, an event whose page was prefetched, or one posted."""
    if not task.step_events[-1]:
        return "no event"
    if isinstance(last, dict) and last != before and last.get("local"):
        return "event, prefetched page"
    return "event, page from the answer"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tasks = library_tasks(2 if args.quick else None)
    specs = [load_site(site) for site in list_sites()]
    server = SiteServer(specs)
    handlers: Samples = {"server: event handler": [], "server: prefetch handler": [],
                         "floor: click": [], "floor: screenshot": []}
    if hasattr(server, "page_event"):  # what both the HTTP handler and the hand-over call
        server.page_event = timed_call(server.page_event, handlers["server: event handler"])  # type: ignore[method-assign]
    else:
        server._event = timed_handler(server._event, handlers["server: event handler"])  # type: ignore[method-assign]
    if hasattr(server, "_next"):
        server._next = timed_handler(server._next, handlers["server: prefetch handler"])  # type: ignore[attr-defined]
    steps: dict[str, dict[str, Any]] = {}
    async with server, LocalProvider(BrowserConfig()) as provider:
        sites = LocalSiteClient(server)
        warm_up(server, tasks)
        floor = Floor(provider, server, tasks[0])
        await floor.open()
        sandbox = await provider.new_browser()
        counter = 0
        rng = random.Random(0)
        modes = args.modes.split(",")
        for lap in range(args.laps):
            episodes = [(task, mode) for index, task in enumerate(tasks)  # the order rotates
                        for mode in modes[index % len(modes):] + modes[:index % len(modes)]]
            for task, mode in episodes:
                options = MODES[mode]
                env = AsyncEnv(FSMTask([task], sites, **options), sandbox)
                await env.reset(seed=lap)
                for _ in range(env.max_steps):
                    action = await env.oracle_action()
                    if action is None:
                        break
                    before = await sandbox.evaluate(_LAST)
                    counter += 1
                    whole = counter % 2 == 0
                    parts: Samples = {}
                    if args.jitter:
                        await asyncio.sleep(rng.uniform(0, FRAME_S))
                    if whole:
                        start = time.perf_counter()
                        _, _, terminated, truncated, _ = await env.step(action)
                        env_ms = (time.perf_counter() - start) * 1000
                    else:
                        env_ms, terminated = await parts_step(env, action, parts)
                        truncated = False
                    if args.jitter:
                        await asyncio.sleep(rng.uniform(0, FRAME_S))
                    floor_ms = await floor.step(handlers)
                    if args.jitter:
                        await asyncio.sleep(rng.uniform(0, FRAME_S))
                    change_ms = await floor.change_step(handlers)
                    last = await sandbox.evaluate(_LAST)
                    cell = steps.setdefault(f"{mode}: {kind_of(env.task, last, before)}",
                                            {"whole": [], "floor": [], "ratio": [], "change": [],
                                             "change_ratio": [], "parts": {}, "page": {}})
                    cell["floor"].append(floor_ms)
                    cell["change"].append(change_ms)
                    if whole:
                        cell["whole"].append(env_ms)
                        cell["ratio"].append(ratio(env_ms, floor_ms))
                        cell["change_ratio"].append(ratio(env_ms, change_ms))
                    else:
                        for name, values in parts.items():
                            cell["parts"].setdefault(name, []).extend(values)
                        cell["parts"].setdefault("total (parts)", []).append(env_ms)
                    if isinstance(last, dict) and last != before:
                        for name in ("swap", "answer", "shown"):
                            if name in last:
                                cell["page"].setdefault(name, []).append(float(last[name]))
                    if terminated or truncated:
                        break
                await env.close()
        await sandbox.close()
        await floor.close()
    return {"tasks": len(tasks), "laps": args.laps, "steps": steps, "server": handlers}


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for kind, cell in result["steps"].items():
        whole = cell["whole"]
        rows[kind] = {
            "n": len(whole) + len(cell["parts"].get("total (parts)", [])),
            "env_step_ms_p50": median(whole), "env_step_ms_p90": percentile(whole, 90),
            "floor_ms_p50": median(cell["floor"]),
            "env_over_floor_paired_p50": median(r for r in cell["ratio"] if r is not None),
            "change_floor_ms_p50": median(cell.get("change", [])),
            "env_over_change_floor_paired_p50": median(r for r in cell.get("change_ratio", []) if r is not None),
            "env_steps_in_one_frame": (sum(1 for v in whole if v < ONE_FRAME_MS) / len(whole)) if whole else None,
            "parts_ms_p50": {name: median(v) for name, v in cell["parts"].items()},
            "page_ms_p50": {name: median(v) for name, v in cell["page"].items()},
        }
    for mode in sorted({kind.split(":")[0] for kind in result["steps"]}):
        cells = [c for kind, c in result["steps"].items() if kind.split(":")[0] == mode]
        every_whole = [v for c in cells for v in c["whole"]]
        every_floor = [v for c in cells for v in c["floor"]]
        rows[f"{mode}: all steps"] = {
            "n": len(every_floor), "env_step_ms_p50": median(every_whole),
            "env_step_ms_p90": percentile(every_whole, 90), "floor_ms_p50": median(every_floor),
            "env_over_floor_paired_p50": median(r for c in cells for r in c["ratio"] if r is not None),
            "change_floor_ms_p50": median(v for c in cells for v in c.get("change", [])),
            "env_over_change_floor_paired_p50": median(r for c in cells for r in c.get("change_ratio", [])
                                                       if r is not None),
            "env_steps_in_one_frame": (sum(1 for v in every_whole if v < ONE_FRAME_MS)
                                       / max(1, len(every_whole))),
            "parts_ms_p50": {}, "page_ms_p50": {}}
    return {"kinds": rows, "server_ms_p50": {k: median(v) for k, v in result["server"].items() if v}}


def report(result: dict[str, Any]) -> dict[str, Any]:
    summary = summarize(result)
    kinds = summary["kinds"]
    print_table("an FSM step against the floor (ms, medians; ratio paired per step)",
                ["kind", "steps", "env.step", "p90", "floor", "env/floor", "page-change floor",
                 "env/page-change floor", "in one frame"],
                [[k, str(s["n"]), fmt(s["env_step_ms_p50"]), fmt(s["env_step_ms_p90"]), fmt(s["floor_ms_p50"]),
                  fmt(s["env_over_floor_paired_p50"], 2), fmt(s["change_floor_ms_p50"]),
                  fmt(s["env_over_change_floor_paired_p50"], 2), fmt(s["env_steps_in_one_frame"], 2)]
                 for k, s in kinds.items()])
    names = ["click", "flush", "settle", "verdict", "screenshot", "total (parts)"]
    print_table("the same steps in parts (ms, medians)", ["kind", *names, "page: swap", "page: answer",
                                                          "page: shown"],
                [[k, *(fmt(s["parts_ms_p50"].get(n)) for n in names), fmt(s["page_ms_p50"].get("swap")),
                  fmt(s["page_ms_p50"].get("answer")), fmt(s["page_ms_p50"].get("shown"))]
                 for k, s in kinds.items() if s["parts_ms_p50"]])
    print_table("server handlers and the floor's parts (ms, medians)", ["part", "ms"],
                [[k, fmt(v)] for k, v in summary["server_ms_p50"].items()])
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 tasks per site, one lap")
    parser.add_argument("--laps", type=int, default=None, help="laps over the tasks (a layout seed each)")
    parser.add_argument("--modes", default="default,post",
                        help="FSMTask modes to interleave: default (the default task: on a tree with "
                             "the hand-over, the task takes the page's events), post "
                             "(FSMTask(take_events=False): the page posts them; not on a tree before "
                             "the option), prefetch (FSMTask(prefetch=True))")
    parser.add_argument("--no-jitter", dest="jitter", action="store_false",
                        help="start each env and floor step right after the previous one, not after "
                             "a random pause of up to one frame")
    parser.add_argument("--out", default=None, help="JSON results path")
    args = parser.parse_args(argv)
    args.laps = args.laps or (1 if args.quick else 2)
    result = asyncio.run(run(args))
    summary = report(result)
    path = write_results("bench_fsm_step", {"args": vars(args), **summary, "raw": result},
                         out=args.out, quick=args.quick)
    console.print(f"results: {path}")
    return summary


if __name__ == "__main__":
    main()
