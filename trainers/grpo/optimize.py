"""One GRPO policy update: several epochs of PPO-clip minibatch steps over one batch.

The reference model's log-probabilities are computed once per batch (no gradient); the
rollout's own log-probabilities are the ratios' denominators, so every epoch after the
first is still correct. Minibatch order comes from ``shuffle`` (a ``torch.Generator``
the checkpoint saves). A loss that is not finite stops the run (``TrainingSignalError``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trainers.errors import TrainingSignalError
from trainers.grpo.batch import TrainStep, padded, score
from trainers.grpo.config import LossSpec
from trainers.grpo.losses import aggregate, grpo_loss


def reference_logprobs(reference: Any, policy: Any, steps: Sequence[TrainStep], size: int) -> list[Any]:
    """The frozen reference's per-token log-probabilities of each step (1-D tensors)."""
    import torch

    out: list[Any] = []
    with torch.no_grad():
        for first in range(0, len(steps), size):
            scored = score(reference, policy, steps[first: first + size])
            out.extend(row[: int(n)] for row, n in zip(scored.logprobs, scored.mask.sum(1), strict=True))
    return out


def optimize(policy: Any, reference: Any | None, steps: Sequence[TrainStep], spec: LossSpec,
             optimizer: Any, shuffle: Any, *, update: int) -> dict[str, float]:
    """Train on ``steps``; returns the means of the logged figures over every minibatch."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    ref = reference_logprobs(reference, policy, steps, spec.minibatch) \
        if reference is not None and spec.kl_coef > 0 else None
    totals: dict[str, float] = {}
    count = 0
    policy.model.train()
    for _ in range(spec.epochs):
        order = torch.randperm(len(steps), generator=shuffle).tolist()
        for first in range(0, len(order), spec.minibatch):
            chunk = order[first: first + spec.minibatch]
            batch = [steps[i] for i in chunk]
            scored = score(policy.model, policy, batch)
            old = padded([s.logprobs for s in batch], scored.logprobs)
            advantages = torch.tensor([s.advantage for s in batch], dtype=scored.logprobs.dtype,
                                      device=scored.logprobs.device)
            logp_ref = None
            if ref is not None:
                logp_ref = pad_sequence([ref[i] for i in chunk], batch_first=True)
                logp_ref = torch.nn.functional.pad(logp_ref, (0, scored.logprobs.shape[1] - logp_ref.shape[1]))
            try:
                loss, stats = grpo_loss(scored.logprobs, old, advantages, scored.mask,
                                        clip_low=spec.clip_low, clip_high=spec.clip_high,
                                        logp_ref=logp_ref, kl_coef=spec.kl_coef,
                                        aggregation=spec.aggregation)
            except FloatingPointError as exc:
                raise TrainingSignalError(f"update {update}: {exc}") from exc
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), spec.max_grad_norm)
            optimizer.step()
            entropy = aggregate(scored.entropy, scored.mask, spec.aggregation).item()
            figures = {"loss": stats.loss, "policy_loss": stats.policy_loss, "kl": stats.kl,
                       "clip_fraction": stats.clip_fraction, "ratio": stats.ratio_mean,
                       "entropy": entropy, "grad_norm": float(norm)}
            for name, value in figures.items():
                totals[name] = totals.get(name, 0.0) + value
            count += 1
    means = {k: v / max(count, 1) for k, v in totals.items()}
    if not math.isfinite(means.get("grad_norm", 0.0)):
        raise TrainingSignalError(f"update {update}: expected finite gradients, got a gradient norm of "
                                  f"{means['grad_norm']}; lower loss.learning_rate")
    return {**means, "minibatches": count}
