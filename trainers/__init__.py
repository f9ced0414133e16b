"""Policies and trainers for Qwen2.5-VL-class computer-use agents.

- ``trainers.models``: load a Qwen-VL policy (``load_policy``), the project's own tokenizer
  and random-init checkpoints for CPUs (``cua model init``), batched generation with
  log-probabilities.
- ``trainers.agents``: the ``hf:``, ``openai:`` and ``vllm:`` agents of ``cua eval``.
- ``trainers.serve``: ``cua serve``, an OpenAI-compatible endpoint for a policy.
- ``trainers.training``: ``cua train sft|dpo``, offline training on the store's exports with
  TRL's SFTTrainer and DPOTrainer (example configs in ``trainers/configs/``).

The store's exports (``cua store export``) produce the SFT, DPO and GRPO data the training
loops read. ``harness`` never imports this package: it finds the agents and commands
through entry points (pyproject.toml).
"""
