"""The GRPO objective (pure tensor functions).

Per completion token ``t`` of sample ``i`` (a mask marks the completion's tokens):

- importance ratio ``rho = exp(logp_new - logp_old)``, with ``logp_old`` recorded at
  rollout time, so several optimizer epochs over one batch stay correct;
- PPO-clip: ``-min(rho * A_i, clip(rho, 1 - eps_low, 1 + eps_high) * A_i)``;
- a k3 KL estimate against a frozen reference: ``exp(r) - r - 1`` with
  ``r = logp_ref - logp_new`` (unbiased, always >= 0);
- aggregation: ``token-mean`` (every token of the batch weighs the same) or ``seq-mean``
  (each sequence's token mean, then the mean over sequences).

``grpo_loss`` returns the loss and the figures a run logs: the clip fraction, the mean
ratio, the KL and (given logits) the entropy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

Aggregation = Literal["token-mean", "seq-mean"]


@dataclass(frozen=True)
class LossStats:
    """What one loss evaluation logs (plain floats)."""

    loss: float
    policy_loss: float
    kl: float
    clip_fraction: float
    ratio_mean: float
    entropy: float | None


def aggregate(values: torch.Tensor, mask: torch.Tensor, how: Aggregation) -> torch.Tensor:
    """The mean of ``values`` over the masked tokens, per ``how``."""
    mask = mask.to(values.dtype)
    if how == "token-mean":
        return (values * mask).sum() / mask.sum().clamp(min=1.0)
    per_sequence = (values * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1.0)
    return per_sequence.mean()


def kl_k3(logp_new: torch.Tensor, logp_ref: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(new || ref): ``exp(r) - r - 1``, ``r = ref - new``."""
    r = logp_ref - logp_new
    return torch.exp(r) - r - 1


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Per-token entropy of the policy's distribution (logits: ... x vocab)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


def grpo_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
              mask: torch.Tensor, *, clip_low: float = 0.2, clip_high: float = 0.2,
              logp_ref: torch.Tensor | None = None, kl_coef: float = 0.0,
              aggregation: Aggregation = "token-mean",
              logits: torch.Tensor | None = None) -> tuple[torch.Tensor, LossStats]:
    """The PPO-clip policy loss plus ``kl_coef`` times the k3 KL (see the module docstring).

    ``logp_new``, ``logp_old``, ``logp_ref``, ``mask``: batch x tokens; ``advantages``:
    batch (one per sample, broadcast over its tokens) or batch x tokens.
    """
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logp_new)
    ratio = torch.exp(logp_new - logp_old)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * advantages
    policy = aggregate(-torch.minimum(unclipped, clipped), mask, aggregation)
    kl = aggregate(kl_k3(logp_new, logp_ref), mask, aggregation) if logp_ref is not None \
        else torch.zeros((), dtype=policy.dtype)
    loss = policy + kl_coef * kl if logp_ref is not None else policy
    if not torch.isfinite(loss):
        raise FloatingPointError(f"expected a finite GRPO loss, got {loss.item()}; check the "
                                 "learning rate and the log-probabilities (policy loss "
                                 f"{policy.item()}, KL {kl.item()})")
    with torch.no_grad():
        was_clipped = ((ratio < 1 - clip_low) | (ratio > 1 + clip_high)).to(ratio.dtype)
        entropy = aggregate(token_entropy(logits), mask, aggregation).item() if logits is not None else None
        stats = LossStats(loss=loss.item(), policy_loss=policy.item(), kl=kl.item(),
                          clip_fraction=aggregate(was_clipped, mask, "token-mean").item(),
                          ratio_mean=aggregate(ratio, mask, "token-mean").item(), entropy=entropy)
    return loss, stats
