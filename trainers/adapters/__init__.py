"""Adapters that let other RL frameworks train on the harness's envs (docs/adapters.md).

- ``trl_env``: an environment class for TRL's ``GRPOTrainer(environment_factory=...)``
  (``pip install 'cua-harness[trl]'``). It imports nothing of TRL itself.
"""
