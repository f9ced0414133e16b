"""Reward modes: turning a task's judgement of a step into the env's reward.

Pure functions of the task's ``Validation`` (its own reward and, on FSM sites, the step
verdict) and the episode's start distance ``d0`` (shortest distance from the start state
to the goal):

- ``outcome``: the task's own reward (FSM sites: 1.0 on the step that reaches the goal,
  else 0.0; MiniWoB: the page's time-discounted reward at the end).
- ``step`` (verdict-shaped): ``[goal reached] + s / d0``, where ``s`` is +1 when the step
  fired a transition on a shortest path, -1 when it fired one that is not (or led to a
  dead end), and 0 when it fired nothing. An optimal episode earns 2.0.
- ``progress``: ``(distance_before - distance_after) / d0``, the fraction of the start's
  distance the step closed (negative when it moved away); a step into a dead end earns
  -1.0. An episode's rewards sum to its progress, 1.0 when it reaches the goal.

Where a task has no verdict (MiniWoB), every mode is ``outcome``.
"""

from __future__ import annotations

from typing import Literal

from fsm_sites.serving.verdict import StepVerdict

RewardMode = Literal["outcome", "step", "progress"]
REWARD_MODES: tuple[RewardMode, ...] = ("outcome", "step", "progress")
DEAD_END_REWARD = -1.0


def verdict_sign(verdict: StepVerdict) -> int:
    """+1 for a step along a shortest path, -1 for a transition off it (or into a dead end),
    0 for a step that fired nothing."""
    if not verdict.transition_fired:
        return 0
    if verdict.on_shortest_path and verdict.distance_after is not None:
        return 1
    return -1


def step_reward(mode: RewardMode, task_reward: float, verdict: StepVerdict | None,
                start_distance: int | None) -> float:
    """The env's reward for one step under ``mode`` (see the module docstring)."""
    if mode == "outcome" or verdict is None:
        return task_reward
    d0 = max(1, start_distance if start_distance is not None else (verdict.distance_before or 1))
    if mode == "step":
        return float(verdict.goal_reached) + verdict_sign(verdict) / d0
    if mode == "progress":
        if verdict.distance_after is None:
            return DEAD_END_REWARD
        before = verdict.distance_before if verdict.distance_before is not None else d0
        return (before - verdict.distance_after) / d0
    raise ValueError(f"expected a reward mode in {REWARD_MODES}, got {mode!r}")


def episode_progress(start_distance: int | None, final_distance: int | None, *, success: bool,
                     has_verdicts: bool) -> float:
    """The fraction of the start's distance-to-goal the episode closed, in [0, 1]: 1.0 on
    success; 0.0 at a dead end; without verdicts (no distances), 1.0 on success else 0.0."""
    if success:
        return 1.0
    if not has_verdicts or not start_distance or final_distance is None:
        return 0.0
    return max(0.0, (start_distance - final_distance) / start_distance)
