"""Shared pieces of the benchmarks: timing statistics, the bare CDP screenshot, process-tree
memory read from /proc, a description of the machine, result files and tables.

Benchmarks are not tests: they measure, print a table and write JSON under
``benchmarks/results/`` (quick runs under ``runs/bench-quick/``, so they never replace
the committed full-mode results). The machine is small and often shared, so every benchmark
runs short measurements several times, interleaves the systems it compares, and
reports medians (and the load average it saw, so a reader can judge the noise).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from playwright.async_api import CDPSession
from playwright.async_api import Error as PlaywrightError
from rich.console import Console
from rich.table import Table

from harness.evaluation.stats import format_successes
from sandboxes.browser.chromium import find_chromium
from sandboxes.browser.config import BrowserConfig

RESULTS_DIR = Path(__file__).parent / "results"
QUICK_RESULTS_DIR = Path(__file__).resolve().parent.parent / "runs" / "bench-quick"
console = Console(width=150)


# ---- statistics ---------------------------------------------------------------------------


def median(values: Iterable[float]) -> float | None:
    """The median, or None for no values (so a missing system reads as missing, not 0)."""
    data = [v for v in values if v is not None]
    return statistics.median(data) if data else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by nearest rank, or None for no values."""
    data = sorted(values)
    if not data:
        return None
    rank = max(0, min(len(data) - 1, round(q / 100 * (len(data) - 1))))
    return data[rank]


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is missing or the denominator is 0."""
    if numerator is None or denominator in (None, 0):
        return None
    return numerator / denominator


def latency_stats(seconds: Sequence[float]) -> dict[str, float | None]:
    """p50 and p90 in ms of one cell's step times (linear interpolation; p50 is the
    median), what a result file keeps instead of every step's time."""
    ms = [1000 * t for t in seconds]
    if len(ms) < 2:
        return {"step_ms_p50": ms[0] if ms else None, "step_ms_p90": ms[0] if ms else None}
    deciles = statistics.quantiles(ms, n=10, method="inclusive")
    return {"step_ms_p50": deciles[4], "step_ms_p90": deciles[8]}


def success_cell(rate: float, episodes: int) -> str:
    """A success rate over ``episodes`` for a table, with its 95% Wilson interval:
    ``"30% [11–60] (3/10)"``; with 8 episodes one episode is 12.5 points, and the cell shows it."""
    return format_successes(round(rate * episodes), episodes)


def fmt(value: float | None, digits: int = 1, unit: str = "") -> str:
    """A number for a table cell; "n/a" for a missing one."""
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


# ---- the bare screenshot ---------------------------------------------------------------------


async def capture(cdp: CDPSession, config: BrowserConfig, *, attempts: int = 1) -> bytes:
    """One ``Page.captureScreenshot`` with the env's capture settings for ``config`` (the
    parameters ``BrowserSandbox`` sends), so a bare loop differs from the env only by what
    the env adds around the capture. With ``attempts`` > 1, retries while Chromium refuses
    to capture a page that has not painted its first frame yet."""
    params: dict[str, object] = {"format": config.image_format, "captureBeyondViewport": False,
                                 "optimizeForSpeed": config.fast_encoding}
    if attempts < 1:
        raise ValueError(f"expected attempts >= 1, got {attempts}")
    if config.image_format == "jpeg":
        params["quality"] = config.jpeg_quality
    for attempt in range(attempts):
        try:
            result = await cdp.send("Page.captureScreenshot", params)
            return base64.b64decode(result["data"])
        except PlaywrightError:
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.01)
    raise AssertionError("unreachable")


# ---- memory of process trees, read from /proc ----------------------------------------------


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after the last ")".
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (not ``root`` itself)."""
    children = _children_map()
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _rollup(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes from smaps_rollup; (0, 0) if it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


def tree_memory(roots: Iterable[int], *, exclude_python: bool = True) -> dict[str, Any]:
    """Summed RSS and PSS of the descendants of ``roots``.

    Python interpreters are left out by default: the benchmark's own driver processes
    are not part of what an env costs. What remains is the browser (all its renderer,
    GPU and utility processes) and its automation driver (Playwright's node process or
    chromedriver). RSS counts shared pages once per process (an upper bound); PSS
    shares them out (closer to what the machine really spends).
    """
    pids: set[int] = set()
    for root in roots:
        pids.update(descendants(root))
    rss = pss = 0
    counted = 0
    for pid in pids:
        if exclude_python and _comm(pid).startswith("python"):
            continue
        proc_rss, proc_pss = _rollup(pid)
        rss, pss, counted = rss + proc_rss, pss + proc_pss, counted + 1
    return {"rss_mb": rss / 2**20, "pss_mb": pss / 2**20, "processes": counted}


# ---- the machine ----------------------------------------------------------------------------


def _chromium_version() -> str | None:
    try:
        out = subprocess.run([find_chromium(), "--version"], capture_output=True, text=True,
                             timeout=10, check=False).stdout
    except Exception:  # a missing browser must not lose a run's numbers
        return None
    return out.strip() or None


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, load, date and software versions, as BENCHMARKS.md
    records them."""
    model = platform.processor() or "unknown"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem_gib = None
    try:
        with open("/proc/meminfo") as fh:
            mem_gib = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "memory_gib": mem_gib,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "chromium": _chromium_version(),
        "playwright": _package_version("playwright"),
    }


# ---- output ---------------------------------------------------------------------------------


def write_results(name: str, payload: dict[str, Any], out: Path | str | None = None, *,
                  quick: bool = False) -> Path:
    """Write ``payload`` (plus the machine description) as JSON; return the path: ``out``
    if given, else ``runs/bench-quick/<name>.json`` for a quick run (ignored by git) and
    ``benchmarks/results/<name>.json`` for a full one."""
    path = Path(out) if out else (QUICK_RESULTS_DIR if quick else RESULTS_DIR) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Print one rich table."""
    table = Table(title=title, title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
