"""verl's ``main_ppo`` with the ``cua_step_grpo`` estimator registered where verl computes
advantages:

    python -m trainers.adapters.verl_main_ppo <the arguments of verl.trainer.main_ppo> \\
        algorithm.adv_estimator=cua_step_grpo +algorithm.cua_step_weight=0.5

verl's ``main_ppo`` runs its trainer, and so ``compute_advantage``, inside a ``TaskRunner``
(a Ray actor, a process of its own). An estimator registered in the launching process
(importing ``trainers.adapters.verl_advantage`` there) is not registered in that actor, and
verl fails with "Unknown advantage estimator simply: cua_step_grpo". This entry point is
verl's own (its Hydra config ``verl/trainer/config/ppo_trainer.yaml``, its validation, its
Ray start) with task runners whose ``run`` registers the estimator in the actor's process
first. It takes every argument ``verl.trainer.main_ppo`` takes.

Needs verl (``requirements/verl.txt``); the agent loop workers import
``trainers.adapters.verl_loop`` themselves, through the agent loop config's ``_target_``.
"""

from __future__ import annotations

from typing import Any

import hydra
import ray
from omegaconf import DictConfig
from verl.trainer import main_ppo, main_ppo_v0
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from trainers.adapters.verl_advantage import ESTIMATOR_NAME, register_with_verl


class CUATaskRunnerV1(main_ppo.TaskRunnerV1.__ray_actor_class__):
    """verl's V1 task runner, registering ``cua_step_grpo`` in its own process."""

    def run(self, config: DictConfig) -> Any:
        register_with_verl()
        return super().run(config)


class CUATaskRunner(main_ppo_v0.TaskRunner.__ray_actor_class__):
    """verl's legacy (``trainer.use_v1=false``) task runner, registering ``cua_step_grpo``."""

    def run(self, config: DictConfig) -> Any:
        register_with_verl()
        return super().run(config)


@hydra.main(config_path="pkg://verl.trainer.config", config_name="ppo_trainer", version_base=None)
def main(config: DictConfig) -> None:
    """``verl.trainer.main_ppo.main``, with the task runners above."""
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config))
    runner = CUATaskRunnerV1 if config.trainer.use_v1 else CUATaskRunner
    main_ppo.run_ppo(config, task_runner_class=ray.remote(runner))


__all__ = ["ESTIMATOR_NAME", "CUATaskRunner", "CUATaskRunnerV1", "main"]

if __name__ == "__main__":
    main()
