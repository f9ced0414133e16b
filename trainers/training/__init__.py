"""``cua train sft|dpo``: offline training on the store's exports, on TRL.

- ``config``: the run's pydantic configs (``SFTConfig``, ``DPOConfig``).
- ``data``: the store's export as rows, and the collators that encode them as the ``hf:``
  agent encodes its prompts.
- ``collect``: verified oracle data for a run whose store is empty.
- ``evaluate``: the before/after evaluation through the ``hf:`` agent and ``cua eval``'s runner.
- ``metrics`` / ``report``: ``metrics.jsonl`` (with the dead-signal check) and ``report.html``.
- ``run``: the run directory and the steps every run shares; ``sft`` / ``dpo``: the loops.
- ``cli``: the ``cua train`` commands.
"""
