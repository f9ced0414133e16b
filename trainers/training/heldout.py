"""The dense held-out metric: on states of held-out tasks, is the model's greedy reply the
oracle's next step? Collected once, measured with forward passes only.

The states are an SFT export: each row a prompt exactly as the agent sees it and the
oracle's action there (the target). They come from a corpus's held-out split
(``CORPUS/heldout/sft.parquet``), from ``cua store export --format sft`` of a store, or from a
trajectory store folder of oracle episodes on held-out tasks (``cua eval --agent oracle
--store DIR --elements`` on them), which is exported with the run's own prompt.

Per state, one teacher-forced forward pass over the prompt's tokens and the target's (the
action text and ``<|im_end|>``, what SFT trains):

- ``heldout_exact_match``: the share of states where every target token is the argmax given
  the prompt and the target's earlier tokens. That holds exactly when greedy decoding
  replies with the target and stops, so it is the next-action exact match of the greedy
  decode (the reply's text, not its parse), from one forward pass instead of a generate loop.
  Generation never emits a few special tokens; an argmax on one of them counts as a miss.
- ``heldout_token_accuracy``: the share of target tokens that are the argmax (all states).
- ``heldout_nll``: the mean negative log-likelihood of a target token.

``HeldoutProbe`` holds the states (a fixed sample of at most ``max_states``) and measures a
policy; SFT and DPO log it every ``every`` optimizer steps (``heldout_callback``), GRPO every
``every`` updates, and ``cua train heldout`` scores a checkpoint.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from harness.prompts import PromptConfig
from trainers.errors import TrainingDataError
from trainers.models.inputs import (
    PolicyParts,
    completion_ids,
    completion_logits,
    encode_completions,
)
from trainers.training.config import HeldoutSpec
from trainers.training.data import SFTExample, export_rows, read_export, sft_examples
from trainers.training.metrics import MetricsLog


class HeldoutProbe:
    """The held-out states of a run, loaded once, and the measurement of a policy on them."""

    def __init__(self, spec: HeldoutSpec, states: list[SFTExample]) -> None:
        self.spec, self.states = spec, states

    @classmethod
    def load(cls, spec: HeldoutSpec, prompt: PromptConfig, work_dir: Path) -> HeldoutProbe:
        """The states of ``spec``; a store is exported with ``prompt`` into ``work_dir``."""
        path = Path(spec.states)
        if path.is_dir():
            path = export_rows(path, "sft", Path(work_dir), prompt)
        elif not path.is_file():
            raise TrainingDataError(f"heldout.states: expected an SFT export (.parquet) or a store "
                                    f"folder, got {spec.states}, which does not exist; collect held-out "
                                    "states first (docs/training.md, the dense held-out metric)")
        states = sft_examples(read_export(path), path)
        if len(states) > spec.max_states:
            states = random.Random(0).sample(states, spec.max_states)
        return cls(spec, states)

    def due(self, step: int, last: int) -> bool:
        """Whether to measure after ``step`` of ``last``."""
        return step % self.spec.every == 0 or step == last

    def measure(self, policy: PolicyParts) -> dict[str, float | int]:
        """The metric's figures for ``policy`` (see the module docstring)."""
        started = time.perf_counter()
        totals: dict[str, float] = {"exact": 0, "tokens": 0, "correct": 0, "nll": 0.0}
        size = self.spec.batch_size
        for start in range(0, len(self.states), size):
            batch = score_batch(policy, self.states[start:start + size])
            for key in totals:
                totals[key] += batch[key]
        n, tokens = len(self.states), max(1, int(totals["tokens"]))
        return {"heldout_exact_match": round(totals["exact"] / n, 4),
                "heldout_token_accuracy": round(totals["correct"] / tokens, 4),
                "heldout_nll": round(totals["nll"] / tokens, 4), "heldout_states": n,
                "heldout_seconds": round(time.perf_counter() - started, 2)}


def score_batch(policy: PolicyParts, states: list[SFTExample]) -> dict[str, Any]:
    """Exact matches, target tokens, argmax hits and summed NLL of one batch of states
    (one forward pass, no gradient, the model in eval mode for it)."""
    import torch

    model = policy.model
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            encoded = encode_completions(policy, [s.prompt for s in states],
                                         [completion_ids(policy, s.target) for s in states])
            logits, targets, counts = completion_logits(model, encoded)  # the target positions only
    finally:
        model.train(was_training)
    hits = logits.argmax(dim=-1) == targets
    exact = sum(bool(row.all()) for row in hits.split(counts))
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    nll = -logprobs.gather(-1, targets.unsqueeze(-1)).sum().item()
    return {"exact": int(exact), "tokens": len(targets), "correct": int(hits.sum().item()),
            "nll": float(nll)}


def heldout_callback(probe: HeldoutProbe, policy: PolicyParts, log: MetricsLog) -> Any:
    """A ``transformers.TrainerCallback`` that logs the probe before training, every
    ``every`` optimizer steps and at the end, as ``heldout`` lines of metrics.jsonl."""
    from transformers import TrainerCallback

    class HeldoutCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 0:
                log.write("heldout", step=0, **probe.measure(policy))

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if probe.due(state.global_step, state.max_steps):
                log.write("heldout", step=state.global_step, **probe.measure(policy))

    return HeldoutCallback()
