"""Reward modes and episode progress, against hand-computed numbers."""

from __future__ import annotations

import pytest

from fsm_sites.serving.verdict import StepVerdict
from harness.rewards import episode_progress, step_reward, verdict_sign


def _v(fired: bool, on_path: bool, before: int | None, after: int | None, goal: bool = False) -> StepVerdict:
    return StepVerdict(state_before="a", state_after="b" if fired else "a", transition_fired=fired,
                       on_shortest_path=on_path, distance_before=before, distance_after=after,
                       goal_reached=goal)


@pytest.mark.parametrize("verdict, sign", [
    (_v(True, True, 3, 2), 1), (_v(True, False, 3, 4), -1), (_v(False, False, 3, 3), 0),
    (_v(True, False, 3, None), -1),
])
def test_verdict_sign(verdict, sign) -> None:
    assert verdict_sign(verdict) == sign


def test_outcome_is_the_task_reward_whatever_the_verdict() -> None:
    assert step_reward("outcome", 0.7, _v(True, True, 2, 1), 4) == 0.7
    assert step_reward("step", 0.7, None, None) == 0.7  # no verdict (MiniWoB): every mode is outcome


def test_step_mode_by_hand() -> None:
    d0 = 4
    assert step_reward("step", 0.0, _v(True, True, 4, 3), d0) == 0.25
    assert step_reward("step", 0.0, _v(True, False, 3, 4), d0) == -0.25
    assert step_reward("step", 0.0, _v(False, False, 3, 3), d0) == 0.0
    assert step_reward("step", 1.0, _v(True, True, 1, 0, goal=True), d0) == 1.25


def test_progress_mode_by_hand_sums_to_the_progress() -> None:
    d0 = 4
    steps = [_v(True, True, 4, 3), _v(True, False, 3, 4), _v(True, True, 4, 3),
             _v(True, True, 3, 2), _v(False, False, 2, 2)]
    rewards = [step_reward("progress", 0.0, v, d0) for v in steps]
    assert rewards == [0.25, -0.25, 0.25, 0.25, 0.0]
    assert sum(rewards) == pytest.approx(episode_progress(d0, 2, success=False, has_verdicts=True)) == 0.5
    assert step_reward("progress", 0.0, _v(True, False, 2, None), d0) == -1.0  # a dead end


def test_episode_progress_by_hand() -> None:
    assert episode_progress(5, 2, success=False, has_verdicts=True) == 0.6
    assert episode_progress(5, 0, success=True, has_verdicts=True) == 1.0
    assert episode_progress(5, None, success=False, has_verdicts=True) == 0.0  # dead end
    assert episode_progress(5, 7, success=False, has_verdicts=True) == 0.0  # moved away: clipped
    assert episode_progress(None, None, success=True, has_verdicts=False) == 1.0
    assert episode_progress(None, None, success=False, has_verdicts=False) == 0.0
