"""The core install alone (``pip install cua-harness``, no extras) runs ``cua``, an FSM
eval with the oracle agent and a JSONL export of its store; a suite, a Parquet export or
``cua demo``, which need an extra, say which one before they start.

Cost: the venv (``.venv-core/``, git-ignored) is made once per pyproject.toml and reused.
Cold (a fresh clone, or pyproject.toml changed): a venv and ``pip install -e .`` of the core
through the host's pip config, which takes one to a few minutes (PyPI and pip's cache).
Warm: a few seconds, the eval itself. The install is editable, so the code under test is
always this checkout's; a change of dependencies or entry points changes pyproject.toml,
which makes the venv again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-core"
#: modules the core must not bring: the extras' (and torch, which none of the core needs)
NOT_IN_CORE = ("torch", "transformers", "datasets", "mss", "Xlib", "miniwob", "selenium", "tqdm",
               "openenv")


def _key() -> str:
    """What the venv depends on: pyproject.toml, this interpreter and where the checkout is."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(f"{sys.version}\n{sys._base_executable}\n{ROOT}".encode())  # type: ignore[attr-defined]
    return digest.hexdigest()


def _env() -> dict[str, str]:
    """This environment without the test venv's Python paths, so only .venv-core counts."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def core_venv() -> Path:
    """``.venv-core`` with the core installed, made again when ``_key()`` changed. A lock
    keeps two test runs of one checkout from building it at once."""
    stamp = VENV / ".installed-key"
    with open(ROOT / ".venv-core.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.read_text() != _key():
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([sys._base_executable, "-m", "venv", str(VENV)], check=True,  # type: ignore[attr-defined]
                           env=_env(), timeout=300)
            try:
                installed = _run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "-e", "."],
                                 ROOT, timeout=1200)
            finally:  # a stale one in the root shadows the other venvs' entry points (Makefile)
                shutil.rmtree(ROOT / "cua_harness.egg-info", ignore_errors=True)
            assert installed.returncode == 0, installed.stderr[-3000:]
            stamp.write_text(_key())
    return VENV


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a cold run installs the core from the package index
def test_the_core_alone_runs_cua_and_an_fsm_eval(core_venv: Path, tmp_path: Path) -> None:
    python = str(core_venv / "bin" / "python")
    probe = "import importlib.util, json, sys; print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m)]))"
    present = _run([python, "-c", probe, *NOT_IN_CORE], tmp_path, timeout=60)
    assert json.loads(present.stdout) == [], present.stderr

    cua = str(core_venv / "bin" / "cua")
    shown = _run([cua, "--help"], tmp_path, timeout=120)
    assert shown.returncode == 0 and "eval" in shown.stdout, shown.stderr[-2000:]

    store = str(tmp_path / "store")
    result = _run([cua, "eval", "--suite", "fsm:shop/open_mug", "--agent", "oracle", "--episodes", "1",
                   "--no-progress", "--out", str(tmp_path / "eval"), "--store", store], tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["episodes"] == 1 and summary["success_rate"] == 1.0, summary

    export = [cua, "store", "export", store, "--format", "sft"]
    jsonl = _run([*export, "--jsonl", "--out", str(tmp_path / "jsonl")], tmp_path, timeout=120)
    assert jsonl.returncode == 0 and (tmp_path / "jsonl" / "sft.jsonl").stat().st_size > 0, jsonl.stderr
    parquet = _run([*export, "--out", str(tmp_path / "parquet")], tmp_path, timeout=120)
    assert parquet.returncode != 0 and "pip install 'cua-harness[export]'" in parquet.stderr, parquet.stderr

    for suite, extra in (("miniwob:click-test", "miniwob"), ("desktop:tk-settings-password", "desktop")):
        refused = _run([cua, "eval", "--suite", suite, "--agent", "random", "--out", str(tmp_path / extra)],
                       tmp_path, timeout=120)
        assert refused.returncode != 0 and f"pip install 'cua-harness[{extra}]'" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr[-2000:]
    demo = _run([cua, "demo", "--out", str(tmp_path / "demo")], tmp_path, timeout=120)
    assert demo.returncode != 0 and "pip install 'cua-harness[miniwob]'" in demo.stderr, demo.stderr[-2000:]
    assert not (tmp_path / "demo").exists()  # refused before any stage ran
