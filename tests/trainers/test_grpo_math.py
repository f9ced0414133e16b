"""The GRPO advantages and loss against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.grpo.advantages import (
    StepSample,
    combined_advantages,
    episode_advantages,
    normalized,
    returns_to_go,
    step_advantages,
    zero_variance_groups,
)
from trainers.grpo.config import LossSpec
from trainers.grpo.losses import aggregate, episode_token_weights, grpo_loss, kl_k3, token_entropy


def test_normalized_and_returns_to_go_by_hand() -> None:
    # mean 2, population std sqrt(2/3)
    got = normalized([1.0, 2.0, 3.0], eps=0.0)
    assert got == pytest.approx([-1 / math.sqrt(2 / 3), 0.0, 1 / math.sqrt(2 / 3)])
    assert normalized([5.0, 5.0]) == [0.0, 0.0]
    assert normalized([1.0, 3.0], "mean") == [-1.0, 1.0]
    assert returns_to_go([1.0, 0.0, 2.0], gamma=0.5) == [1.5, 1.0, 2.0]


def _episode(group: str, episode: int, steps: list[tuple[str | None, float]]) -> list[StepSample]:
    return [StepSample(group, episode, t, anchor, reward) for t, (anchor, reward) in enumerate(steps)]


def test_episode_advantages_are_per_group_returns_normalized() -> None:
    samples = (_episode("g", 0, [("a", 0.0), ("b", 1.0)])       # return 1
               + _episode("g", 1, [("a", 0.0), ("c", 0.0)])     # return 0
               + _episode("h", 0, [("x", 2.0)])                 # a group of its own
               + _episode("h", 1, [("x", 2.0)]))
    got = episode_advantages(samples, eps=0.0)
    assert got == pytest.approx([1.0, 1.0, -1.0, -1.0, 0.0, 0.0])  # g: (1-0.5)/0.5; h: flat
    assert zero_variance_groups(samples) == (1, 2)


def test_step_advantages_group_steps_from_the_same_state_and_count_a_revisit_once() -> None:
    # Both episodes start in "a": their first steps form a step group. Episode 0 then
    # steps from "b" (alone: advantage 0); episode 1 comes back to "a", which counts once.
    samples = (_episode("g", 0, [("a", 0.5), ("b", 1.0)])
               + _episode("g", 1, [("a", -0.5), ("a", 0.0), ("c", 1.0)]))
    got = step_advantages(samples, gamma=1.0, eps=0.0)
    # returns-to-go: ep0 [1.5, 1.0], ep1 [0.5, 1.0, 1.0]; group "a" has one member per
    # episode, its first visit: [1.5, 0.5], mean 1, std 0.5; the revisit's 1.0 scores 0
    assert got == pytest.approx([1.0, 0.0, -1.0, 0.0, 0.0])
    # a state only one episode reached gives 0, however often it came back
    alone = _episode("g", 0, [("a", 0.0), ("a", 1.0)]) + _episode("g", 1, [("b", 0.0)])
    assert step_advantages(alone, gamma=1.0, eps=0.0) == [0.0, 0.0, 0.0]


def test_the_discount_makes_a_wasted_step_cost_something() -> None:
    # Both reach the goal (reward 1 on the last step) from "a"; episode 1 wastes a step.
    samples = _episode("g", 0, [("a", 0.0), ("b", 1.0)]) + _episode("g", 1, [("a", 0.0), ("x", 0.0), ("b", 1.0)])
    assert step_advantages(samples, gamma=1.0, eps=0.0)[0] == 0.0  # undiscounted: equal
    # gamma 0.9: returns-to-go from "a" are 0.9 and 0.81; mean 0.855, std 0.045
    got = step_advantages(samples, gamma=0.9, eps=0.0)
    assert got[0] == pytest.approx(1.0) and got[2] == pytest.approx(-1.0)
    assert step_advantages(samples, gamma=0.9, normalize="mean", eps=0.0)[2] == pytest.approx(-0.045)


def test_combined_advantages_weight_the_step_term() -> None:
    samples = (_episode("g", 0, [("a", 1.0)]) + _episode("g", 1, [("a", 0.0)]))
    episode = episode_advantages(samples, eps=0.0)
    step = step_advantages(samples, eps=0.0)
    assert combined_advantages(samples, step_weight=0.0, eps=0.0) == episode
    both = combined_advantages(samples, step_weight=0.5, eps=0.0)
    assert both == pytest.approx([e + 0.5 * s for e, s in zip(episode, step, strict=True)])
    assert both == pytest.approx([1.5, -1.5])


def test_the_loss_by_hand() -> None:
    logp_old = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.25]]))
    logp_new = torch.log(torch.tensor([[0.75, 0.5], [0.25, 0.125]]))  # ratios [1.5, 1], [1, 0.5]
    mask = torch.tensor([[1, 1], [1, 0]])
    advantages = torch.tensor([1.0, -1.0])
    loss, stats = grpo_loss(logp_new, logp_old, advantages, mask, clip_low=0.2, clip_high=0.2)
    # per token -min(rho*A, clip(rho)*A): [-1.2, -1.0], [1.0, (masked)]
    assert loss.item() == pytest.approx((-1.2 - 1.0 + 1.0) / 3)
    assert stats.clip_fraction == pytest.approx(1 / 3) and stats.ratio_mean == pytest.approx(3.5 / 3)
    seq, _ = grpo_loss(logp_new, logp_old, advantages, mask, aggregation="seq-mean")
    assert seq.item() == pytest.approx(((-1.2 - 1.0) / 2 + 1.0) / 2)


def test_episode_mean_weighs_episodes_not_steps_by_hand() -> None:
    # Episode A: one step of 2 tokens, losses [1, 3]. Episode B: two steps, [2] and [4, 6, 8].
    values = torch.tensor([[1.0, 3.0, 0.0], [2.0, 0.0, 0.0], [4.0, 6.0, 8.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]])
    weights = episode_token_weights(["A", "B", "B"], [2, 1, 3])
    assert weights == pytest.approx([1 / (2 * 2), 1 / (2 * 4), 1 / (2 * 4)])  # 1 / (episodes * tokens)
    got = aggregate(values, mask, "episode-mean", torch.tensor(weights)).item()
    assert got == pytest.approx((2.0 + 5.0) / 2)  # A's token mean 2, B's 5
    assert aggregate(values, mask, "token-mean").item() == pytest.approx(24 / 6)
    assert aggregate(values, mask, "seq-mean").item() == pytest.approx((2 + 2 + 6) / 3)
    # split over two minibatches, the weighted sums still add up to the batch's episode mean
    first = aggregate(values[:2], mask[:2], "episode-mean", torch.tensor(weights[:2]))
    second = aggregate(values[2:], mask[2:], "episode-mean", torch.tensor(weights[2:]))
    assert (first + second).item() == pytest.approx(3.5)
    with pytest.raises(ValueError, match="token weights"):
        aggregate(values, mask, "episode-mean")
    logp = torch.zeros(3, 3)
    loss, stats = grpo_loss(logp, logp, torch.tensor([1.0, -1.0, -1.0]), mask, aggregation="episode-mean",
                            weights=torch.tensor(weights))
    assert loss.item() == pytest.approx((-1.0 + 1.0) / 2) and stats.clip_fraction == 0.0  # ratio 1: -A


def test_kl_k3_and_entropy_by_hand() -> None:
    new, ref = torch.log(torch.tensor([0.5])), torch.log(torch.tensor([0.25]))
    assert kl_k3(new, ref).item() == pytest.approx(0.5 - math.log(0.5) - 1)
    assert kl_k3(new, new).item() == 0.0
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    assert token_entropy(logits).item() == pytest.approx(-(0.5 * math.log(0.5) + 0.5 * math.log(0.25)))
    with_kl, stats = grpo_loss(new[None], new[None], torch.tensor([0.0]), torch.ones(1, 1),
                               logp_ref=ref[None], kl_coef=0.1)
    assert with_kl.item() == pytest.approx(0.1 * (0.5 - math.log(0.5) - 1)) and stats.kl > 0
    assert aggregate(torch.tensor([[1.0, 3.0]]), torch.tensor([[1, 0]]), "token-mean").item() == 1.0


def test_a_nan_loss_is_an_error() -> None:
    nan = torch.tensor([[float("nan")]])
    with pytest.raises(FloatingPointError, match="finite GRPO loss"):
        grpo_loss(nan, torch.zeros(1, 1), torch.tensor([1.0]), torch.ones(1, 1))


def test_gradients_flow_only_through_the_new_log_probabilities() -> None:
    logp_new = torch.log(torch.tensor([[0.5]])).requires_grad_()
    loss, _ = grpo_loss(logp_new, torch.log(torch.tensor([[0.5]])), torch.tensor([2.0]), torch.ones(1, 1))
    loss.backward()
    assert logp_new.grad is not None and logp_new.grad.item() == pytest.approx(-2.0)  # -A * rho


def test_the_learning_rate_warms_up_over_the_first_updates_then_follows_the_schedule() -> None:
    warm = LossSpec(warmup_updates=2)
    assert [warm.lr_factor(done, 6) for done in range(4)] == pytest.approx([1 / 3, 2 / 3, 1.0, 1.0])
    decaying = LossSpec(warmup_updates=1, lr_scheduler="linear")
    assert [decaying.lr_factor(done, 4) for done in range(4)] == pytest.approx([0.5, 0.75, 0.5, 0.25])
    assert [LossSpec().lr_factor(done, 4) for done in range(4)] == [1.0] * 4
