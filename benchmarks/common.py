"""Shared pieces of the benchmarks: timing statistics, process-tree memory read from
/proc, a description of the machine, result files and tables.

Benchmarks are not tests: they measure, print a table and write JSON under
``benchmarks/results/``. The machine is small and often shared, so every benchmark
runs short measurements several times, interleaves the systems it compares, and
reports medians (and the load average it saw, so a reader can judge the noise).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

RESULTS_DIR = Path(__file__).parent / "results"
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


def fmt(value: float | None, digits: int = 1, unit: str = "") -> str:
    """A number for a table cell; "n/a" for a missing one."""
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


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


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, load and date, as BENCHMARKS.md records them."""
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
    }


# ---- output ---------------------------------------------------------------------------------


def write_results(name: str, payload: dict[str, Any], out: Path | None = None) -> Path:
    """Write ``payload`` (plus the machine description) as JSON; return the path."""
    path = out or RESULTS_DIR / f"{name}.json"
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
