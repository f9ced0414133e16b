"""Advantages for online GRPO with step-level verifiable rewards (pure functions).

A rollout group is G episodes of one task from one start state (plus, with tree
rollouts, M continuations from states the group visited, restored by jump). Three
estimators, combined by a weight:

- **Episode-level (GRPO).** Each episode's return, normalized within its group:
  ``A_i = (R_i - mean(R)) / (std(R) + eps)``; a group whose returns are all equal gives
  zeros (no signal; the caller counts such groups).
- **Step-level (GiGPO's step groups, exact).** Steps taken from the same FSM state within
  a rollout group form a step group, anchored by the state id (GiGPO must hash
  observations to find them; the FSM names the state). Each step's discounted
  return-to-go is normalized within its step group: ``A_t = (G_t - mean) / (std + eps)``.
  An episode that comes back to a state counts once in that state's group: the mean and
  std are over one member per episode (its first visit's return-to-go, which with
  ``gamma < 1`` already pays for the loop), and every visit is scored against them. A
  state only one episode reached gives 0. Siblings of a tree rollout share the restored state
  as their anchor, so they form a step group with an exactly shared prefix.
- **Combined.** ``A = A_episode + weight * A_step`` per step.

``normalize="std"`` divides by the group's standard deviation (population std, as GRPO
and GiGPO do); ``"mean"`` only subtracts the mean (Dr. GRPO's fix for the length and
difficulty bias of the std division).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

Normalize = Literal["std", "mean"]
EPS = 1e-6


@dataclass(frozen=True)
class StepSample:
    """One step of one episode of a rollout group."""

    group: Hashable  # the rollout group (a task and start state in one update)
    episode: int  # the episode within the group (tree branches get their own numbers)
    step: int  # 0-based within the episode
    anchor: str | None  # the FSM state the step was taken from; None: no step grouping
    reward: float  # the step's reward


def normalized(values: Sequence[float], normalize: Normalize = "std", eps: float = EPS) -> list[float]:
    """``(v - mean) / (std + eps)`` (or ``v - mean``); all zeros when every value is equal."""
    return scored(values, values, normalize, eps) if values else []


def scored(values: Sequence[float], members: Sequence[float], normalize: Normalize = "std",
           eps: float = EPS) -> list[float]:
    """``values`` normalized by the mean and std of ``members`` (all zeros when the members
    are all equal under ``std``)."""
    mean = sum(members) / len(members)
    centred = [v - mean for v in values]
    if normalize == "mean":
        return centred
    std = math.sqrt(sum((m - mean) ** 2 for m in members) / len(members))
    if std < max(eps, 1e-12):
        return [0.0] * len(values)
    return [c / (std + eps) for c in centred]


def returns_to_go(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """``G_t = r_t + gamma * G_{t+1}`` for every step of one episode."""
    out = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def episode_advantages(samples: Sequence[StepSample], *, normalize: Normalize = "std",
                       eps: float = EPS) -> list[float]:
    """Each step's episode-level advantage: its episode's return, normalized within the
    rollout group (every step of an episode gets its episode's advantage)."""
    returns: dict[tuple[Hashable, int], float] = defaultdict(float)
    for s in samples:
        returns[(s.group, s.episode)] += s.reward
    by_group: dict[Hashable, list[tuple[Hashable, int]]] = defaultdict(list)
    for key in returns:
        by_group[key[0]].append(key)
    advantage: dict[tuple[Hashable, int], float] = {}
    for keys in by_group.values():
        for key, value in zip(keys, normalized([returns[k] for k in keys], normalize, eps), strict=True):
            advantage[key] = value
    return [advantage[(s.group, s.episode)] for s in samples]


def step_advantages(samples: Sequence[StepSample], *, gamma: float = 1.0,
                    normalize: Normalize = "std", eps: float = EPS) -> list[float]:
    """Each step's step-level advantage: its discounted return-to-go, normalized within its
    step group (same rollout group, same anchor state); 0 without a group to compare to."""
    episodes: dict[tuple[Hashable, int], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        episodes[(s.group, s.episode)].append(i)
    to_go = [0.0] * len(samples)
    for indices in episodes.values():
        ordered = sorted(indices, key=lambda i: samples[i].step)
        for i, g in zip(ordered, returns_to_go([samples[i].reward for i in ordered], gamma),
                        strict=True):
            to_go[i] = g
    groups: dict[tuple[Hashable, str], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        if s.anchor is not None:
            groups[(s.group, s.anchor)].append(i)
    out = [0.0] * len(samples)
    for indices in groups.values():
        # One member per episode: its first visit's return-to-go (a loop back to the state
        # must not count the episode twice); every visit is scored against those members.
        first: dict[int, int] = {}
        for i in sorted(indices, key=lambda i: samples[i].step):
            first.setdefault(samples[i].episode, i)
        if len(first) < 2:
            continue
        for i, value in zip(indices, scored([to_go[i] for i in indices],
                                            [to_go[i] for i in first.values()], normalize, eps),
                            strict=True):
            out[i] = value
    return out


def combined_advantages(samples: Sequence[StepSample], *, step_weight: float, gamma: float = 1.0,
                        normalize: Normalize = "std", eps: float = EPS) -> list[float]:
    """``A_episode + step_weight * A_step`` per step (``step_weight=0``: plain GRPO)."""
    episode = episode_advantages(samples, normalize=normalize, eps=eps)
    if step_weight == 0:
        return episode
    step = step_advantages(samples, gamma=gamma, normalize=normalize, eps=eps)
    return [a + step_weight * b for a, b in zip(episode, step, strict=True)]


def zero_variance_groups(samples: Sequence[StepSample], eps: float = EPS) -> tuple[int, int]:
    """(rollout groups whose episode returns are all equal, rollout groups): groups that
    carry no episode-level signal."""
    returns: dict[Hashable, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for s in samples:
        returns[s.group][s.episode] += s.reward
    flat = sum(1 for episodes in returns.values()
               if max(episodes.values()) - min(episodes.values()) < max(eps, 1e-12))
    return flat, len(returns)
