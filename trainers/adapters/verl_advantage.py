"""``cua_step_grpo``: a verl advantage estimator that credits each turn with its own reward.

verl's estimators see ``token_level_rewards`` (``rm_scores``, less any KL penalty) and
``response_mask``; its GRPO reads one score per response. The CUA agent loop
(``trainers.adapters.verl_loop``) stores each turn's step reward at the turn's last model
token, so the turns and their rewards can be read back from those two tensors:

- a **turn** is a run of model tokens (``response_mask`` 1); its reward is the sum of
  ``token_level_rewards`` from its first token up to the next turn's first token (so a
  reward verl put on the last token, as its own agent loops do, counts for the last turn);
- the advantages are the project's online-GRPO ones (``trainers.grpo.advantages``):
  the episode's return normalized within its GRPO group (``index``, verl's ``uid``) plus
  ``cua_step_weight`` times each turn's discounted return-to-go normalized among the
  group's turns of the same position (verl's estimators see no FSM states, so the step
  groups are anchored by turn number: exact for the first turn, whose state all of the
  group share, and an approximation after);
- each turn's advantage is spread over its model tokens; observation tokens get 0.

Options, from verl's ``algorithm`` config: ``gamma`` (the discount of the return-to-go),
``norm_adv_by_std_in_grpo`` (divide by the std, else only centre) and
``cua_step_weight`` (1.0 unless set, ``+algorithm.cua_step_weight=0.5``; 0 is GRPO on the
episode returns).

Importing this module registers the estimator with verl where verl is installed; the
functions themselves need only torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from trainers.grpo.advantages import EPS, Normalize, StepSample, combined_advantages

#: the name ``algorithm.adv_estimator`` takes
ESTIMATOR_NAME = "cua_step_grpo"


def turn_spans(mask: torch.Tensor) -> list[tuple[int, int]]:
    """The ``[start, end)`` token spans of the model's turns: the runs of 1 in ``mask``."""
    spans: list[tuple[int, int]] = []
    start = None
    for i, value in enumerate(mask.tolist()):
        if value and start is None:
            start = i
        elif not value and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(mask)))
    return spans


def turn_token_scores(mask: torch.Tensor, turn_scores: Sequence[float]) -> torch.Tensor:
    """Per-token scores with each turn's score on its last model token (what
    ``CUAAgentLoopOutput`` stores as ``rm_scores``). Turns cut off by the response length
    add their scores to the last kept turn, so the scores always sum to the episode's."""
    scores = torch.zeros(mask.shape, dtype=torch.float32)
    if scores.numel() == 0:
        return scores
    spans = turn_spans(mask)
    ends = [end - 1 for _, end in spans] or [scores.numel() - 1]
    for k, value in enumerate(turn_scores):
        scores[ends[min(k, len(ends) - 1)]] += float(value)
    return scores


def turn_rewards(token_rewards: torch.Tensor, mask: torch.Tensor) -> list[float]:
    """Each turn's reward: the rewards from its first token to the next turn's first token
    (the first turn also takes any before it)."""
    spans = turn_spans(mask)
    if not spans:
        return []
    bounds = [0] + [start for start, _ in spans[1:]] + [len(mask)]
    return [float(token_rewards[bounds[k]:bounds[k + 1]].sum()) for k in range(len(spans))]


def compute_cua_step_grpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Any] | None = None,
    config: Any = None,
    epsilon: float = EPS,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's estimator signature: ``(advantages, returns)``, both ``(batch, response_length)``.

    ``index`` names each row's GRPO group (verl passes ``uid``); without it every row is a
    group of its own (no signal: zeros)."""
    if token_level_rewards.shape != response_mask.shape:
        raise ValueError(f"expected token_level_rewards and response_mask of one shape, got "
                         f"{tuple(token_level_rewards.shape)} and {tuple(response_mask.shape)}")
    groups = list(index) if index is not None else list(range(len(response_mask)))
    if len(groups) != len(response_mask):
        raise ValueError(f"expected one index per row ({len(response_mask)}), got {len(groups)}")
    gamma = float(_option(config, "gamma", 1.0))
    weight = float(_option(config, "cua_step_weight", 1.0))
    normalize: Normalize = "std" if _option(config, "norm_adv_by_std_in_grpo", True) else "mean"
    samples: list[StepSample] = []
    spans: list[list[tuple[int, int]]] = []
    for row, (rewards, mask) in enumerate(zip(token_level_rewards, response_mask, strict=True)):
        spans.append(turn_spans(mask))
        samples += [StepSample(group=_hashable(groups[row]), episode=row, step=k,
                               anchor=f"turn {k}", reward=r)
                    for k, r in enumerate(turn_rewards(rewards, mask))]
    values = combined_advantages(samples, step_weight=weight, gamma=gamma, normalize=normalize,
                                 eps=epsilon)
    advantages = torch.zeros(response_mask.shape, dtype=torch.float32)
    for sample, value in zip(samples, values, strict=True):
        start, end = spans[sample.episode][sample.step]
        advantages[sample.episode, start:end] = value
    advantages = advantages * response_mask.to(advantages.dtype)
    return advantages, advantages.clone()


def _option(config: Any, name: str, default: Any) -> Any:
    """A field of verl's ``algorithm`` config (a DictConfig, a dataclass, a dict or None)."""
    if config is None:
        return default
    getter = getattr(config, "get", None)
    if callable(getter):
        try:
            value = getter(name, default)
        except (KeyError, AttributeError):
            value = default
    else:
        value = getattr(config, name, default)
    return default if value is None else value


def _hashable(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def register_with_verl() -> bool:
    """Register the estimator as ``cua_step_grpo`` with verl; False where verl is absent.
    Idempotent."""
    try:
        from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est
    except ImportError:
        return False
    if ADV_ESTIMATOR_REGISTRY.get(ESTIMATOR_NAME) is not compute_cua_step_grpo_advantage:
        register_adv_est(ESTIMATOR_NAME)(compute_cua_step_grpo_advantage)
    return True


register_with_verl()
