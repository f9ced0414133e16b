"""One GRPO policy update: several epochs of PPO-clip minibatch steps over one batch.

The reference model's log-probabilities are computed once per batch (no gradient); the
rollout's own log-probabilities are the ratios' denominators, so every epoch after the
first is still correct. Minibatch order comes from ``shuffle`` (a ``torch.Generator``
the checkpoint saves). A loss that is not finite stops the run (``TrainingSignalError``).

Data parallel (``ranks`` with more than one process): the forward runs through the DDP
wrapper, so each backward all-reduces (averages) the gradients; under FSDP through the
sharded model, whose backward reduce-scatters them, and the sharded reference runs the same
agreed number of passes. DDP needs the same number of
backward passes on every rank, so the ranks agree on the most minibatches any of them has;
a rank out of steps repeats one of its steps with a zero weight, and the others' losses are
scaled by ranks / active ranks so the average is over the ranks that had data. One small
all-reduce per minibatch carries that count and whether any rank's loss was not finite, so
a NaN stops every rank at once instead of leaving the others waiting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch.nn.utils.rnn import pad_sequence

from trainers.errors import TrainingSignalError
from trainers.grpo.batch import TrainStep, padded, score
from trainers.grpo.config import LossSpec
from trainers.grpo.distributed import Ranks
from trainers.grpo.losses import aggregate, episode_token_weights, grpo_loss

if TYPE_CHECKING:
    import torch

    from trainers.models.policy import Policy


def reference_logprobs(reference: torch.nn.Module, policy: Policy, steps: Sequence[TrainStep], size: int,
                       passes: int | None = None) -> list[Any]:
    """The frozen reference's per-token log-probabilities of each step (1-D tensors).
    ``passes``: forwards to run in all (a sharded reference: the same count on every rank;
    passes past this rank's steps score its first step again and are dropped)."""
    out: list[Any] = []
    with torch.no_grad():
        for first in range(0, max(len(steps), (passes or 0) * size), size):
            chunk = steps[first: first + size]
            scored = score(reference, policy, chunk or steps[:1])
            if chunk:
                out.extend(row[: int(n)] for row, n in zip(scored.logprobs, scored.mask.sum(1), strict=True))
    return out


def optimize(policy: Policy, reference: torch.nn.Module | None, steps: Sequence[TrainStep], spec: LossSpec,
             optimizer: torch.optim.Optimizer, shuffle: torch.Generator, *, update: int,
             ranks: Ranks | None = None) -> dict[str, float]:
    """Train on ``steps``; returns the means of the logged figures over this rank's minibatches."""
    ranks = ranks or Ranks()
    model = ranks.train_model if ranks.train_model is not None else policy.model
    passes = _passes(ranks, len(steps), spec.minibatch, update)
    ref = reference_logprobs(reference, policy, steps, spec.minibatch, passes if ranks.sharded else None) \
        if reference is not None and spec.kl_coef > 0 else None
    weights = _token_weights(steps, spec)
    totals: dict[str, float] = {}
    count = 0
    was_training = policy.model.training  # rollouts and evaluation find it as they left it
    policy.model.train()
    try:
        for _ in range(spec.epochs):
            order = torch.randperm(len(steps), generator=shuffle).tolist()
            for first in range(0, passes * spec.minibatch, spec.minibatch):
                chunk = order[first: first + spec.minibatch]
                padding = not chunk  # a zero-weight pass: this rank is out of steps
                chunk = chunk or [0]
                batch = [steps[i] for i in chunk]
                scored = score(model, policy, batch)
                old = padded([s.logprobs for s in batch], scored.logprobs)
                advantages = torch.tensor([s.advantage for s in batch], dtype=scored.logprobs.dtype,
                                          device=scored.logprobs.device)
                token_weights = None if weights is None else torch.tensor(
                    [weights[i] for i in chunk], dtype=scored.logprobs.dtype, device=scored.logprobs.device)
                logp_ref = None
                if ref is not None:
                    logp_ref = pad_sequence([ref[i] for i in chunk], batch_first=True)
                    logp_ref = torch.nn.functional.pad(logp_ref, (0, scored.logprobs.shape[1] - logp_ref.shape[1]))
                error: FloatingPointError | None = None
                loss: Any = None
                try:
                    loss, stats = grpo_loss(scored.logprobs, old, advantages, scored.mask,
                                            clip_low=spec.clip_low, clip_high=spec.clip_high,
                                            logp_ref=logp_ref, kl_coef=spec.kl_coef,
                                            aggregation=spec.aggregation, weights=token_weights)
                except FloatingPointError as exc:
                    error = exc
                loss = _agree(ranks, loss, padding, error, update)
                optimizer.zero_grad(set_to_none=True)
                ranks.backward(loss)
                norm = ranks.clip_grad_norm(policy.parameters(), spec.max_grad_norm)
                optimizer.step()
                if padding:
                    continue
                entropy = aggregate(scored.entropy, scored.mask, "token-mean").item()
                figures = {"loss": stats.loss, "policy_loss": stats.policy_loss, "kl": stats.kl,
                           "clip_fraction": stats.clip_fraction, "ratio": stats.ratio_mean,
                           "entropy": entropy, "grad_norm": norm}
                for name, value in figures.items():
                    totals[name] = totals.get(name, 0.0) + value
                count += 1
    finally:
        policy.model.train(was_training)
    means = {k: v / max(count, 1) for k, v in totals.items()}
    if not math.isfinite(means.get("grad_norm", 0.0)):
        raise TrainingSignalError(f"update {update}: expected finite gradients, got a gradient norm of "
                                  f"{means['grad_norm']}; lower loss.learning_rate")
    return {**means, "minibatches": count}


def _token_weights(steps: Sequence[TrainStep], spec: LossSpec) -> list[float] | None:
    """``episode-mean``'s per-step token weights over the whole batch, times the minibatches
    per epoch, so each minibatch's loss is on the scale of a mean and one epoch's minibatches
    add up to that many times the batch's episode mean (None for the other aggregations)."""
    if spec.aggregation != "episode-mean":
        return None
    episodes = [s.episode if s.episode is not None else ("step", i) for i, s in enumerate(steps)]
    scale = math.ceil(len(steps) / spec.minibatch)
    return [w * scale for w in episode_token_weights(episodes, [len(s.token_ids) for s in steps])]


def _passes(ranks: Ranks, steps: int, minibatch: int, update: int) -> int:
    """Minibatches per epoch: this rank's, or the most any rank has (the same on every rank)."""
    mine = math.ceil(steps / minibatch)
    if ranks.world == 1:
        return mine
    counts = ranks.gather(steps)
    if min(counts) == 0:
        raise TrainingSignalError(f"update {update}: expected training steps on every rank, got "
                                  f"{counts} per rank; roll out more groups (group.tasks)")
    return max(math.ceil(c / minibatch) for c in counts)


def _agree(ranks: Ranks, loss: Any, padding: bool, error: FloatingPointError | None,
           update: int) -> Any:
    """The loss this rank backpropagates; raises on every rank when any rank's loss was not
    finite (see the module docstring)."""
    if ranks.world == 1:
        if error is not None:
            raise TrainingSignalError(f"update {update}: {error}") from error
        return loss
    active, failed = ranks.total(0.0 if padding else 1.0, 1.0 if error is not None else 0.0)
    if failed:
        reason = str(error) if error is not None else "another rank's GRPO loss was not finite"
        raise TrainingSignalError(f"update {update} (rank {ranks.rank}): {reason}") from error
    return loss * (0.0 if padding else ranks.world / active)
