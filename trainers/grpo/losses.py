"""The GRPO objective (pure tensor functions).

Per completion token ``t`` of sample ``i`` (a mask marks the completion's tokens):

- importance ratio ``rho = exp(logp_new - logp_old)``, with ``logp_old`` recorded at
  rollout time, so several optimizer epochs over one batch stay correct;
- PPO-clip: ``-min(rho * A_i, clip(rho, 1 - eps_low, 1 + eps_high) * A_i)``;
- a k3 KL estimate against a frozen reference: ``exp(r) - r - 1`` with
  ``r = logp_ref - logp_new`` (unbiased, always >= 0);
- aggregation: ``token-mean`` (every token of the batch weighs the same), ``seq-mean``
  (each sequence's token mean, then the mean over sequences) or ``episode-mean`` (each
  episode's token mean over all its steps, then the mean over episodes: a multi-turn
  episode weighs the same whatever its length, so a failed 6-step episode no longer
  outweighs a solved 2-step one). ``episode-mean`` takes per-sequence token weights from
  :func:`episode_token_weights`, computed once over the whole batch, so minibatches that
  split an episode still add up to the batch's episode mean.

``grpo_loss`` returns the loss and the figures a run logs: the clip fraction, the mean
ratio, the KL (a token mean under every aggregation) and (given logits) the entropy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

Aggregation = Literal["token-mean", "seq-mean", "episode-mean"]


@dataclass(frozen=True)
class LossStats:
    """What one loss evaluation logs (plain floats)."""

    loss: float
    policy_loss: float
    kl: float
    clip_fraction: float
    ratio_mean: float
    entropy: float | None


def episode_token_weights(episodes: Sequence[Hashable], tokens: Sequence[int]) -> list[float]:
    """Per sequence, the weight of each of its tokens under ``episode-mean``:
    ``1 / (E * N_e)`` for ``E`` episodes in the batch and ``N_e`` completion tokens in the
    sequence's episode (all its steps together). The weighted sum of token losses over the
    batch is then the mean over episodes of each episode's token mean."""
    if len(episodes) != len(tokens):
        raise ValueError(f"expected one episode per sequence, got {len(episodes)} episodes for "
                         f"{len(tokens)} sequences")
    per_episode: Counter[Hashable] = Counter()
    for episode, n in zip(episodes, tokens, strict=True):
        per_episode[episode] += n
    count = len(per_episode)
    return [1.0 / (count * per_episode[e]) if per_episode[e] else 0.0 for e in episodes]


def aggregate(values: torch.Tensor, mask: torch.Tensor, how: Aggregation,
              weights: torch.Tensor | None = None) -> torch.Tensor:
    """The mean of ``values`` over the masked tokens, per ``how``; ``episode-mean`` is the
    sum of the masked values times ``weights`` (one per sequence: ``episode_token_weights``)."""
    mask = mask.to(values.dtype)
    if how == "episode-mean":
        if weights is None:
            raise ValueError("expected per-sequence token weights for episode-mean aggregation, got "
                             "none; pass episode_token_weights(...)")
        return (values * mask * weights.to(values.dtype)[:, None]).sum()
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
              aggregation: Aggregation = "token-mean", weights: torch.Tensor | None = None,
              logits: torch.Tensor | None = None) -> tuple[torch.Tensor, LossStats]:
    """The PPO-clip policy loss plus ``kl_coef`` times the k3 KL (see the module docstring).

    ``logp_new``, ``logp_old``, ``logp_ref``, ``mask``: batch x tokens; ``advantages``:
    batch (one per sample, broadcast over its tokens) or batch x tokens; ``weights``: batch,
    the per-sequence token weights ``episode-mean`` needs.
    """
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logp_new)
    ratio = torch.exp(logp_new - logp_old)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * advantages
    policy = aggregate(-torch.minimum(unclipped, clipped), mask, aggregation, weights)
    kl_tokens = kl_k3(logp_new, logp_ref) if logp_ref is not None else None
    kl = aggregate(kl_tokens, mask, aggregation, weights) if kl_tokens is not None \
        else torch.zeros((), dtype=policy.dtype)
    loss = policy + kl_coef * kl if logp_ref is not None else policy
    if not torch.isfinite(loss):
        raise FloatingPointError(f"expected a finite GRPO loss, got {loss.item()}; check the "
                                 "learning rate and the log-probabilities (policy loss "
                                 f"{policy.item()}, KL {kl.item()})")
    with torch.no_grad():
        was_clipped = ((ratio < 1 - clip_low) | (ratio > 1 + clip_high)).to(ratio.dtype)
        entropy = aggregate(token_entropy(logits), mask, aggregation, weights).item() if logits is not None else None
        # The KL is logged as a token mean whatever the aggregation: one scale to tune against.
        kl_mean = aggregate(kl_tokens, mask, "token-mean").item() if kl_tokens is not None else 0.0
        stats = LossStats(loss=loss.item(), policy_loss=policy.item(), kl=kl_mean,
                          clip_fraction=aggregate(was_clipped, mask, "token-mean").item(),
                          ratio_mean=aggregate(ratio, mask, "token-mean").item(), entropy=entropy)
    return loss, stats
