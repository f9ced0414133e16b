"""From rollouts to a training batch: step samples, advantages, and the policy's log-probabilities.

Each step of each rollout becomes a :class:`TrainStep`: the prompt the agent sent (rebuilt
from the step's recorded messages and the episode's screenshots), the completion's token
ids, their log-probabilities at rollout time (the PPO ratio's denominator) and the step's
advantage. A tree branch's restored prefix counts in its episode's return (one extra sample
holding the prefix's reward, never trained on), so a branch competes with the group's full
episodes on equal terms, and its first step shares its step group (the restored FSM state)
with the parent's step there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.prompts import Prompt
from trainers.grpo.advantages import StepSample, combined_advantages, zero_variance_groups
from trainers.grpo.config import AdvantageSpec, NoOpSpec
from trainers.grpo.rollouts import Rollout, no_op_steps, training_rewards
from trainers.models.inputs import completion_logits, encode_completions

if TYPE_CHECKING:
    import torch

    from harness.store.store import TrajectoryStore
    from trainers.models.policy import Policy

REPLAY_NUMBER = 1_000_000  # replayed episodes' numbers in their group (after any branch)


@dataclass(frozen=True)
class TrainStep:
    """One completion to train on."""

    prompt: Prompt[bytes]
    token_ids: list[int]
    logprobs: list[float]  # at rollout time
    advantage: float
    truncated: bool  # the completion hit the token budget (no end-of-turn token)
    episode: tuple[str, int] | None = None  # (rollout group, episode number): episode-mean's unit


@dataclass(frozen=True)
class BatchStats:
    """What the dead-signal checks and the metrics need about one update's rollouts."""

    steps: int
    episodes: int
    flat_groups: int
    groups: int
    truncated: int
    returns: list[float]
    silent_groups: int = 0  # groups whose every advantage is zero: no training signal at all
    no_op_steps: int = 0  # steps that were no-ops (trainers.grpo.rollouts.no_op_steps)
    dropped_groups: int = 0  # groups dynamic sampling left out of the batch
    resampled_groups: int = 0  # groups rolled out to replace them


def step_samples(rollouts: Sequence[Rollout], no_op: NoOpSpec | None = None
                 ) -> tuple[list[StepSample], list[tuple[Rollout, int]]]:
    """The advantage functions' samples, and for each the (rollout, step) it is (step -1:
    a branch's restored prefix, which only adds its reward to the episode's return). Rewards
    are the training rewards (``no_op``'s penalty taken off no-op steps)."""
    no_op = no_op or NoOpSpec(effect="off")
    samples: list[StepSample] = []
    where: list[tuple[Rollout, int]] = []
    for r in rollouts:
        if r.prefix:
            samples.append(StepSample(r.group, r.number, -1, None, sum(training_rewards(r.prefix, no_op))))
            where.append((r, -1))
        rewards = training_rewards(r.episode.transitions, no_op)
        for t, (reward, state) in enumerate(zip(rewards, r.states, strict=True)):
            samples.append(StepSample(r.group, r.number, t, state, reward))
            where.append((r, t))
    return samples, where


def has_signal(group: Sequence[Rollout], spec: AdvantageSpec, no_op: NoOpSpec | None = None) -> bool:
    """Whether a rollout group gives any of its steps a nonzero advantage (dynamic sampling
    drops the groups that do not: all their rewards equal)."""
    samples, _ = step_samples(group, no_op)
    advantages = combined_advantages(samples, step_weight=spec.step_weight, gamma=spec.gamma,
                                     normalize=spec.normalize)
    return any(abs(a) > 1e-9 for a in advantages)


@dataclass(frozen=True)
class Replay:
    """A stored success joining a group that has none (its steps as the store recorded them)."""

    group: str
    reward: float  # the stored episode's return
    steps: list[tuple[Prompt[bytes], list[int], list[float]]]  # prompt, token ids, log-probs


def build_batch(rollouts: Sequence[Rollout], spec: AdvantageSpec, stop_ids: Sequence[int],
                replays: Sequence[Replay] = (), no_op: NoOpSpec | None = None
                ) -> tuple[list[TrainStep], BatchStats]:
    """The training steps of one update and their statistics. A replay counts as one more
    episode of its group (its return only: no step grouping) and trains on its stored
    log-probabilities as the ratio's denominator."""
    samples, where = step_samples(rollouts, no_op)
    for i, replay in enumerate(replays):
        samples.append(StepSample(replay.group, REPLAY_NUMBER + i, 0, None, replay.reward))
    advantages = combined_advantages(samples, step_weight=spec.step_weight, gamma=spec.gamma,
                                     normalize=spec.normalize)
    steps: list[TrainStep] = []
    for i, replay in enumerate(replays):
        advantage = advantages[len(where) + i]
        steps += [TrainStep(prompt, ids, logprobs, advantage, truncated=not ids or ids[-1] not in stop_ids,
                            episode=(replay.group, REPLAY_NUMBER + i))
                  for prompt, ids, logprobs in replay.steps]
    for (r, t), advantage in zip(where, advantages, strict=False):
        if t < 0:
            continue
        decision = r.episode.transitions[t].agent_step
        if decision.token_ids is None or decision.logprobs is None or decision.prompt is None:
            raise ValueError(f"expected the agent to record prompts, token ids and log-probabilities, "
                             f"got a step of {r.episode.task_id} without them; roll out with the hf: agent")
        steps.append(TrainStep(prompt_of(r, t), decision.token_ids, decision.logprobs, advantage,
                               truncated=not decision.token_ids or decision.token_ids[-1] not in stop_ids,
                               episode=(r.group, r.number)))
    flat, groups = zero_variance_groups(samples)
    returns = [r.episode.total_reward + sum(t.reward for t in r.prefix) for r in rollouts]
    signal = {s.group for s, a in zip(samples, advantages, strict=True) if abs(a) > 1e-9}
    idle_after = (no_op or NoOpSpec()).idle_after
    no_ops = sum(sum(no_op_steps(r.episode.transitions, idle_after)) for r in rollouts)
    return steps, BatchStats(len(steps), len(rollouts), flat, groups,
                             sum(s.truncated for s in steps), returns,
                             silent_groups=groups - len(signal), no_op_steps=no_ops)


def prompt_of(r: Rollout, t: int) -> Prompt[bytes]:
    """The prompt of step ``t`` of ``r``, with the screenshots its image parts stand for."""
    decision = r.episode.transitions[t].agent_step
    screens = {r.episode.first.step: r.episode.first.screenshot}
    for transition in [*r.prefix, *r.episode.transitions]:
        screens.setdefault(transition.before.step, transition.before.screenshot)
        screens.setdefault(transition.after.step, transition.after.screenshot)
    image_steps = decision.image_steps or []
    return Prompt(messages=list(decision.prompt or []), images=[screens[s] for s in image_steps],
                  image_steps=list(image_steps))


def stored_success(store: TrajectoryStore, task_id: str, group: str) -> Replay | None:
    """The latest stored success of ``task_id`` whose steps recorded prompts, token ids and
    log-probabilities, as a replay for ``group``; None when there is none."""
    for episode in reversed(store.episodes(success=True)):
        if episode.task_id != task_id:
            continue
        records = [record for _, _, record in store.episode_steps(episode.id)]
        if not records or any(not r.get("token_ids") or not r.get("logprobs") or not r.get("prompt")
                              for r in records):
            continue
        steps = []
        for r in records:
            images = [store.blob(h) for h in r.get("images") or []]
            prompt = Prompt(messages=r["prompt"], images=images, image_steps=list(range(len(images))))
            steps.append((prompt, list(r["token_ids"]), list(r["logprobs"])))
        return Replay(group, episode.reward, steps)
    return None


@dataclass
class Scored:
    """The policy's per-token log-probabilities (and entropies) of a batch of completions,
    padded to batch x tokens with a mask."""

    logprobs: torch.Tensor
    mask: torch.Tensor
    entropy: torch.Tensor


def score(model: torch.nn.Module, policy: Policy, steps: Sequence[TrainStep]) -> Scored:
    """One forward pass of ``model`` (the policy's, or the frozen reference) over ``steps``;
    differentiable when the model's parameters require grad."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    encoded = encode_completions(policy, [s.prompt for s in steps], [s.token_ids for s in steps])
    logits, targets, counts = completion_logits(model, encoded)  # the LM head at the completions only
    picked = torch.log_softmax(logits.float(), dim=-1)
    chosen = picked.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        entropy = -(picked.exp() * picked).sum(-1)
    logprobs = pad_sequence(list(chosen.split(counts)), batch_first=True)
    entropies = pad_sequence(list(entropy.split(counts)), batch_first=True)
    lengths = torch.tensor(counts, device=logprobs.device)
    token_mask = torch.arange(logprobs.shape[1], device=logprobs.device)[None, :] < lengths[:, None]
    return Scored(logprobs, token_mask, entropies)


def padded(values: Sequence[Sequence[float]], like: torch.Tensor) -> torch.Tensor:
    """Per-row float lists as a tensor shaped like ``like`` (zeros past each row's end)."""
    import torch

    out = torch.zeros_like(like)
    for i, row in enumerate(values):
        out[i, : len(row)] = torch.tensor(row, dtype=like.dtype)
    return out
