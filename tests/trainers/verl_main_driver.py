"""Runs in ``.venv-verl`` for test_verl_main_ppo.py: ``trainers.adapters.verl_main_ppo``'s Hydra
entry point composes verl's own config with our estimator, and in a real Ray actor (the
process where verl computes advantages) verl's task runner lacks ``cua_step_grpo`` while
ours has it. Writes a JSON report to argv[1]."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import ray


def composed_config() -> str:
    from trainers.adapters import verl_main_ppo

    sys.argv = ["verl_main_ppo", "--cfg", "job", "algorithm.adv_estimator=cua_step_grpo",
                "+algorithm.cua_step_weight=0.5"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        verl_main_ppo.main()  # --cfg job: Hydra prints the composed config and runs nothing
    return out.getvalue()


def registered(runner: object) -> bool:
    """Whether ``cua_step_grpo`` is registered in the actor's process."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

    return "cua_step_grpo" in ADV_ESTIMATOR_REGISTRY


def main() -> None:
    out = Path(sys.argv[1])
    config = composed_config()
    from trainers.adapters.verl_main_ppo import CUATaskRunnerV1

    root = str(Path(__file__).resolve().parents[2])
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": root, "RAY_DEDUP_LOGS": "0"}})
    try:
        ours = ray.remote(CUATaskRunnerV1).remote()
        report = {
            "config": config,
            "driver_pid": os.getpid(),
            "ours": ray.get(ours.__ray_call__.remote(registered)),
            "ours_pid": ray.get(ours.__ray_call__.remote(lambda runner: os.getpid())),
        }
    finally:
        ray.shutdown()
    out.write_text(json.dumps(report), encoding="utf-8")


if __name__ == "__main__":
    main()
