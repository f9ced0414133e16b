"""summary.json: success rate, reward, steps, refused steps and speed over a results.jsonl,
per task too.

Episodes that failed for infrastructure reasons after every retry carry an ``error``;
they are left out of every figure (they measure the harness, not the agent) and the CLI
reports how many there were. Episodes the agent ended by raising carry an
``agent_error`` instead: they are failures of the agent and count like any other failed
episode. When a key (task, seed, index) appears more than once (a resumed run), its last
record wins.

Every success rate comes with its 95% Wilson interval (``success_ci``, [low, high]): with
8 tasks one task is 12.5 points, and the interval says so. It treats episodes as
independent, which is optimistic for several episodes of one task; ``cua eval compare``
resamples whole tasks for the paired difference.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

from harness.evaluation.stats import wilson_interval
from harness.records import EpisodeRecord

SUMMARY_KEYS = (
    "episodes", "success_rate", "success_ci", "progress", "mean_reward", "steps", "refused_steps",
    "wall_seconds", "steps_per_second", "per_task", "sampled",
)


class Figures(TypedDict):
    """The figures of one group of scored episodes (``figures``)."""

    episodes: int
    success_rate: float
    success_ci: list[float]
    progress: float
    mean_reward: float
    steps: int
    refused_steps: float
    wall_seconds: float
    steps_per_second: float


class TaskFigures(Figures):
    """A group's figures and each task's own."""

    per_task: dict[str, Figures]


class SampledFigures(TaskFigures):
    """The figures of the episodes sampled at a temperature, with those temperatures."""

    temperatures: list[float]


class Summary(TaskFigures):
    """The summary.json object."""

    sampled: SampledFigures | None


def latest(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """One record per (task, seed, index), the last one written."""
    by_key: dict[tuple, EpisodeRecord] = {}
    for record in records:
        by_key[record.key] = record
    return list(by_key.values())


def figures(records: list[EpisodeRecord]) -> Figures:
    """The figures of one group of scored episodes.

    ``wall_seconds`` sums the episodes' own wall times, so ``steps_per_second`` is the
    speed of one env, independent of concurrency.
    """
    n = len(records)
    successes = sum(r.success for r in records)
    steps = sum(r.steps for r in records)
    wall = sum(r.wall_seconds for r in records)
    refused = sum(s.error is not None for r in records for s in r.trajectory)
    return {
        "episodes": n,
        "success_rate": round(successes / n, 4) if n else 0.0,
        "success_ci": [round(bound, 4) for bound in wilson_interval(successes, n)],
        # the mean fraction of the start's distance-to-goal the episodes closed
        "progress": round(sum(r.progress for r in records) / n, 4) if n else 0.0,
        "mean_reward": round(sum(r.reward for r in records) / n, 4) if n else 0.0,
        "steps": steps,
        # the share of steps whose action the env refused or could not parse (an element not
        # in the list, a malformed reply): where a model fails to copy, this says so
        "refused_steps": round(refused / steps, 4) if steps else 0.0,
        "wall_seconds": round(wall, 3),
        "steps_per_second": round(steps / wall, 3) if wall > 0 else 0.0,
    }


def _by_task(records: list[EpisodeRecord]) -> TaskFigures:
    per_task: dict[str, list[EpisodeRecord]] = {}
    for record in records:
        per_task.setdefault(record.task, []).append(record)
    return {**figures(records), "per_task": {task: figures(rs) for task, rs in sorted(per_task.items())}}


def summarize(records: Iterable[EpisodeRecord]) -> Summary:
    """The summary.json object (top-level keys exactly ``SUMMARY_KEYS``).

    The top-level figures are the agent's own episodes (greedy for a model agent);
    ``sampled`` holds the same figures over the episodes sampled at a temperature
    (``cua eval --samples``), with their ``temperatures``, or None when there are none.
    """
    scored = [r for r in latest(records) if r.error is None]
    own = [r for r in scored if r.temperature is None]
    sampled = [r for r in scored if r.temperature is not None]
    return {
        **_by_task(own),
        "sampled": {"temperatures": sorted({r.temperature for r in sampled if r.temperature is not None}),
                    **_by_task(sampled)} if sampled else None,
    }


def write_summary(path: Path, records: Iterable[EpisodeRecord]) -> Summary:
    """Write summary.json and return it."""
    summary = summarize(records)
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return summary
