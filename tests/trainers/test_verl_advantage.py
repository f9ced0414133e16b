"""``cua_step_grpo``, verl's advantage estimator over per-turn rewards, against numbers worked
out by hand (pure tensors; verl itself is exercised in test_verl_loop.py)."""

from __future__ import annotations

import pytest
import torch

from trainers.adapters.verl_advantage import (
    compute_cua_step_grpo_advantage,
    turn_rewards,
    turn_spans,
    turn_token_scores,
)

# two episodes of group "a" and one of group "b"; model tokens 1, observation tokens 0
MASK = torch.tensor([
    [1, 1, 0, 0, 1, 1, 1, 0, 0, 0],  # a: two turns, rewards 0.5, 1.5 (return 2.0)
    [1, 0, 0, 1, 1, 0, 0, 1, 0, 0],  # a: three turns, rewards 0.5, 0, 0 (return 0.5)
    [1, 1, 1, 0, 0, 0, 0, 0, 0, 0],  # b: alone in its group
])
TURN_REWARDS = [[0.5, 1.5], [0.5, 0.0, 0.0], [1.0]]
INDEX = ["a", "a", "b"]


def rewards() -> torch.Tensor:
    return torch.stack([turn_token_scores(m, r) for m, r in zip(MASK, TURN_REWARDS, strict=True)])


def per_token(values: list[list[float]]) -> torch.Tensor:
    """Each turn's advantage on its tokens, 0 on observation tokens."""
    out = torch.zeros(MASK.shape)
    for row, turn_values in enumerate(values):
        for (start, end), value in zip(turn_spans(MASK[row]), turn_values, strict=True):
            out[row, start:end] = value
    return out


def test_turn_rewards_sit_on_each_turn_last_model_token() -> None:
    assert turn_spans(MASK[1]) == [(0, 1), (3, 5), (7, 8)]
    assert rewards()[0].tolist() == [0, 0.5, 0, 0, 0, 0, 1.5, 0, 0, 0]
    assert [turn_rewards(r, m) for r, m in zip(rewards(), MASK, strict=True)] == TURN_REWARDS
    # a turn cut off by the response length adds its reward to the last kept turn
    assert turn_token_scores(torch.tensor([1, 0, 1, 0]), [1.0, 2.0, 4.0]).tolist() == [1, 0, 6, 0]
    # a reward verl put on the very last token (its own agent loops) counts for the last turn
    legacy = torch.zeros(10)
    legacy[-1] = 2.0
    assert turn_rewards(legacy, MASK[0]) == [0.0, 2.0]


def test_step_grpo_advantages_match_hand_computed_values() -> None:
    # group a: episode returns 2.0 and 0.5 -> +1, -1 (mean 1.25, std 0.75). Turn 0's
    # returns-to-go 2.0 and 0.5 -> +1, -1; turn 1's 1.5 and 0.0 -> +1, -1; turn 2 (only
    # the second episode) -> 0. Group b alone -> 0. Combined with weight 0.5:
    # first episode 1 + 0.5 = 1.5 on both turns, second -1.5, -1.5, -1.
    config = {"gamma": 1.0, "norm_adv_by_std_in_grpo": True, "cua_step_weight": 0.5}
    advantages, returns = compute_cua_step_grpo_advantage(rewards(), MASK, INDEX, config)
    expected = per_token([[1.5, 1.5], [-1.5, -1.5, -1.0], [0.0]])
    assert torch.allclose(advantages, expected, atol=1e-5)
    assert torch.equal(advantages, returns)
    assert not advantages[MASK == 0].any()


def test_mean_centring_and_discount() -> None:
    # norm_adv_by_std_in_grpo False: only centred. Episode: +-0.75. gamma 0.5: turn 0's
    # returns-to-go 0.5 + 0.5 * 1.5 = 1.25 and 0.5 -> +-0.375; turn 1's 1.5 and 0 -> +-0.75.
    config = {"gamma": 0.5, "norm_adv_by_std_in_grpo": False, "cua_step_weight": 1.0}
    advantages, _ = compute_cua_step_grpo_advantage(rewards(), MASK, INDEX, config)
    expected = per_token([[1.125, 1.5], [-1.125, -1.5, -0.75], [0.0]])
    assert torch.allclose(advantages, expected, atol=1e-6)


def test_weight_zero_is_grpo_on_episode_returns_and_defaults() -> None:
    advantages, _ = compute_cua_step_grpo_advantage(rewards(), MASK, INDEX,
                                                    {"cua_step_weight": 0.0})
    assert torch.allclose(advantages, per_token([[1.0, 1.0], [-1.0, -1.0, -1.0], [0.0]]), atol=1e-5)
    # no config: gamma 1, std, weight 1; no index: every row its own group, no signal
    default, _ = compute_cua_step_grpo_advantage(rewards(), MASK, INDEX)
    assert torch.allclose(default, per_token([[2.0, 2.0], [-2.0, -2.0, -1.0], [0.0]]), atol=1e-5)
    alone, _ = compute_cua_step_grpo_advantage(rewards(), MASK)
    assert not alone.any()


def test_bad_shapes_are_named() -> None:
    with pytest.raises(ValueError, match="one shape"):
        compute_cua_step_grpo_advantage(rewards()[:, :5], MASK, INDEX)
    with pytest.raises(ValueError, match="one index per row"):
        compute_cua_step_grpo_advantage(rewards(), MASK, INDEX[:2])
