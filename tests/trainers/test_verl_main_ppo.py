"""``python -m trainers.adapters.verl_main_ppo``, in ``.venv-verl`` against verl 0.9.1 and a
real local Ray: it takes verl's own Hydra config and arguments, and its task runner, the Ray
actor in whose process verl computes advantages, has ``cua_step_grpo`` registered (an
import in the launching process alone does not reach that process).
tests/trainers/verl_main_driver.py runs there; this test checks what it reports."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERL_PYTHON = ROOT / ".venv-verl" / "bin" / "python"
DRIVER = Path(__file__).with_name("verl_main_driver.py")

pytestmark = pytest.mark.skipif(
    not VERL_PYTHON.is_file(),
    reason=f"no verl venv at {VERL_PYTHON.parent.parent}: `make verl-venv` builds it "
           "(`make test` does so first)")


def test_the_wrapper_registers_the_estimator_in_verls_trainer_process(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([str(VERL_PYTHON), str(DRIVER), str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0 and out.is_file(), proc.stderr[-4000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    lines = report["config"].splitlines()
    assert "  adv_estimator: cua_step_grpo" in lines and "  cua_step_weight: 0.5" in lines
    assert "  use_v1: true" in lines  # verl's own ppo_trainer.yaml, composed by our entry point
    assert report["ours"] is True and report["ours_pid"] != report["driver_pid"]
