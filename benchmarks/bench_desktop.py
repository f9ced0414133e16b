"""Issue 10's desktop benchmark: step latency (action + screenshot) and reset time of the
desktop sandbox against the browser sandbox, in one run.

    .venv/bin/python -m benchmarks.bench_desktop [--quick]

Systems, all at 1024x768:

- ``browser``: a ``BrowserSandbox`` (a context of one shared headless Chromium) on a static
  page; a step is a click on empty page space + a PNG screenshot; a reset is
  ``reset(url)`` (fresh context, page loaded).
- ``desktop``: a ``DesktopSandbox`` (Xvfb + openbox) showing an xterm; a step is a click
  on the xterm (XTEST, then the default settle: the screen quiet for 40 ms) + a PNG
  screenshot (mss); ``desktop-nosettle`` is the same with ``settle_quiet_ms=0``.
  Resets: ``new_display`` (every app ended, fresh home, a new X server and openbox) and
  ``same_display`` (apps ended, fresh home, the X server kept with no client left); each
  reset is timed with one xterm open before it, and ``+xterm`` adds starting an xterm
  and waiting until its window is viewable (a desktop task's reset).

Repeats interleave the systems (their order rotates), each reports medians; ratios are
of medians to the browser's from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from benchmarks.common import console, fmt, median, print_table, ratio, write_results
from sandboxes.actions import Click
from sandboxes.browser.config import BrowserConfig
from sandboxes.desktop.config import DesktopConfig
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.providers import LocalProvider

PAGE = "<!doctype html><html><body style='margin:0;height:100vh;background:#fafafa'><p>bench</p></body></html>"


async def _browser(provider: LocalProvider, url: str, steps: int, resets: int) -> dict[str, list[float]]:
    sandbox = await provider.new_browser(BrowserConfig(viewport_width=1024, viewport_height=768))
    out: dict[str, list[float]] = {"step": [], "reset": []}
    try:
        await sandbox.reset(url)
        for _ in range(resets):
            start = time.perf_counter()
            await sandbox.reset(url)
            out["reset"].append(time.perf_counter() - start)
        for i in range(steps):
            start = time.perf_counter()
            await sandbox.execute(Click(x=500 + i % 50, y=500))
            await sandbox.screenshot()
            out["step"].append(time.perf_counter() - start)
    finally:
        await sandbox.close()
    return out


async def _xterm(desktop: DesktopSandbox) -> None:
    proc = desktop.launch(["xterm", "-geometry", "100x30+0+0"])
    await desktop.wait_for_window(lambda w: w.pid == proc.pid, "xterm")


async def _desktop(config: DesktopConfig, steps: int, resets: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"step": [], "reset": [], "reset_xterm": []}
    async with DesktopSandbox(config) as desktop:
        for _ in range(resets):
            await _xterm(desktop)
            start = time.perf_counter()
            await desktop.reset()
            out["reset"].append(time.perf_counter() - start)
            await _xterm(desktop)
            start = time.perf_counter()
            await desktop.reset()
            await _xterm(desktop)
            out["reset_xterm"].append(time.perf_counter() - start)
        for i in range(steps):
            start = time.perf_counter()
            await desktop.execute(Click(x=300 + i % 50, y=200))
            await desktop.screenshot()
            out["step"].append(time.perf_counter() - start)
    return out


def _configs() -> dict[str, DesktopConfig]:
    return {"desktop": DesktopConfig(), "desktop-nosettle": DesktopConfig(settle_quiet_ms=0),
            "desktop-same": DesktopConfig(reset_mode="same_display")}


async def run(repeats: int, steps: int, resets: int) -> dict[str, Any]:
    from aiohttp import web

    app = web.Application()
    app.router.add_get("/", lambda _r: web.Response(text=PAGE, content_type="text/html"))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    samples: dict[str, dict[str, list[float]]] = {}
    systems = ["browser", *_configs()]
    try:
        async with LocalProvider() as provider:
            for repeat in range(repeats):
                order = systems[repeat % len(systems):] + systems[:repeat % len(systems)]
                for name in order:
                    console.print(f"repeat {repeat + 1}/{repeats}: {name}")
                    got = (await _browser(provider, url, steps, resets) if name == "browser"
                           else await _desktop(_configs()[name], steps, resets))
                    for key, values in got.items():
                        samples.setdefault(name, {}).setdefault(key, []).extend(values)
    finally:
        await runner.cleanup()
    return {name: {f"{key}_ms_median": 1000 * (median(v) or 0) for key, v in cells.items()} | {
        f"{key}_n": len(v) for key, v in cells.items()} for name, cells in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and steps")
    parser.add_argument("--out", type=Path, default=None, help="result JSON (default: see common.write_results)")
    args = parser.parse_args(argv)
    repeats, steps, resets = (1, 10, 2) if args.quick else (3, 30, 5)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    results = asyncio.run(run(repeats, steps, resets))
    browser = results["browser"]
    rows = []
    for name, cells in results.items():
        rows.append([name, fmt(cells.get("step_ms_median")), fmt(ratio(cells.get("step_ms_median"), browser["step_ms_median"]), 2),
                     fmt(cells.get("reset_ms_median")), fmt(ratio(cells.get("reset_ms_median"), browser["reset_ms_median"]), 2),
                     fmt(cells.get("reset_xterm_ms_median"))])
    print_table("desktop vs browser sandbox (medians)",
                ["system", "step ms", "x browser", "reset ms", "x browser", "reset + xterm ms"], rows)
    path = write_results("bench_desktop", {"settings": {"repeats": repeats, "steps": steps, "resets": resets},
                                           "load_before": load_before,
                                           "load_after": Path("/proc/loadavg").read_text().split()[:3],
                                           "results": results}, args.out, quick=args.quick)
    console.print(f"wrote {path}")


if __name__ == "__main__":
    main()
