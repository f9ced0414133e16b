"""Adapters that let other RL frameworks train on the harness's envs (docs/adapters.md).

- ``trl_env``: an environment class for TRL's ``GRPOTrainer(environment_factory=...)``
  (``pip install 'cua-harness[trl]'``). It imports nothing of TRL itself.
- ``verl_loop``: a verl ``AgentLoopBase`` registered as ``"cua_agent"``, and (through
  ``verl_advantage``) the ``"cua_step_grpo"`` advantage estimator over its per-turn rewards
  (verl 0.9.1 in a venv of its own: ``make verl-venv``).
- ``skyrl_env``: a ``skyrl-gym`` ``BaseTextEnv`` registered as ``"cua"``
  (``pip install 'cua-harness[skyrl]'``).
- ``verl_agent_env``: an environment manager in the shape of verl-agent's
  ``EnvironmentManagerBase`` (duck-typed; verl-agent is not on PyPI).
- ``host``: what they share: ``EnvHost`` (a private event loop and an env provider), the
  per-process ``shared_host``, the env config ``AdapterEnvConfig`` and the short step texts.
"""
