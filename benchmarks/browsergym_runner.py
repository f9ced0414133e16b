"""Runs BrowserGym's MiniWoB env for ``bench_env`` in its own virtualenv.

BrowserGym 0.14 pins Playwright 1.44 while this project uses a newer one, so it cannot
share ``.venv``. ``ensure_venv`` creates ``.venv-browsergym/`` (or ``$CUA_BROWSERGYM_VENV``)
idempotently with pip, and each env runs as a subprocess of ``_browsergym_driver.py``.
Concurrency N = N driver processes released together (BrowserGym's sync Playwright is
bound to the thread that started it, so processes are its natural way to scale).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import tree_memory

REPO = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("CUA_BROWSERGYM_VENV", REPO / ".venv-browsergym"))
PACKAGES = ("browsergym-miniwob==0.14.3", "browsergym-core==0.14.3")
DRIVER = Path(__file__).with_name("_browsergym_driver.py")


class BrowserGymUnavailable(RuntimeError):
    """BrowserGym could not be installed or started; the message says why."""


def venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> Path:
    """The BrowserGym venv's python, creating the venv and installing BrowserGym if needed."""
    python = venv_python()
    if python.exists() and _imports_ok(python):
        return python
    steps = [
        [sys.executable, "-m", "venv", str(VENV)] if not python.exists() else None,
        [str(python), "-m", "pip", "install", "-q", *PACKAGES],
    ]
    for cmd in filter(None, steps):
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise BrowserGymUnavailable(f"expected `{' '.join(cmd)}` to succeed, got exit "
                                        f"{done.returncode}: {' | '.join(tail)}")
    if not _imports_ok(python):
        raise BrowserGymUnavailable(f"expected `import browsergym.miniwob` to work in {VENV}, it fails")
    return python


def _imports_ok(python: Path) -> bool:
    done = subprocess.run([str(python), "-c", "import browsergym.miniwob"],
                          capture_output=True, check=False)
    return done.returncode == 0


def run_cell(job: dict[str, Any], n: int, timeout_s: float = 600.0) -> dict[str, Any]:
    """Run ``n`` BrowserGym envs on ``job`` at once; the same result shape as in-process cells."""
    python = ensure_venv()
    procs = [subprocess.Popen([str(python), str(DRIVER), json.dumps(job)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    try:
        deadline = time.monotonic() + timeout_s
        for proc in procs:
            _expect_ready(proc, deadline)
        memory = tree_memory([p.pid for p in procs])
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = [_result(proc, deadline) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    steps = sum(len(r["latencies"]) for r in results)
    wall = max(r["t_end"] for r in results) - min(r["t_start"] for r in results)
    return {
        "resets": [t for r in results for t in r["resets"]],
        "latencies": [t for r in results for t in r["latencies"]],
        "wall_s": wall, "steps": steps, "steps_per_s": steps / wall if wall > 0 else None,
        "ended": sum(r["ended"] for r in results), "memory": memory,
    }


def _expect_ready(proc: subprocess.Popen, deadline: float) -> None:
    """Wait until ``deadline`` for the driver's READY line. The read runs on a thread so
    that a driver that hangs before printing anything fails the cell instead of hanging
    the benchmark."""
    assert proc.stdout is not None
    stdout = proc.stdout
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=max(0.0, deadline - time.monotonic()))
    if reader.is_alive():
        proc.kill()  # its end of the pipe closes, which ends the (daemon) reader's readline
        reader.join(timeout=5)
        raise BrowserGymUnavailable("expected the BrowserGym driver to print READY in time, "
                                    "it printed nothing before the deadline")
    line = lines[0].strip()
    if line != "READY":
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise BrowserGymUnavailable(
            f"expected the BrowserGym driver to print READY, got {line!r}; "
            f"its stderr ends: {' | '.join(err.strip().splitlines()[-3:])}")


def _result(proc: subprocess.Popen, deadline: float) -> dict[str, Any]:
    out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise BrowserGymUnavailable(
            f"expected the BrowserGym driver to finish, got exit {proc.returncode}; "
            f"stderr ends: {' | '.join(err.strip().splitlines()[-3:])}")
    return json.loads(lines[-1])
