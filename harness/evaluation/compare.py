"""`cua eval compare RUN_A RUN_B`: is A's success rate really different from B's?

Two runs of ``cua eval`` over the same tasks and seeds see the same task instances, so
their episodes pair up by (task, seed, index, temperature): the comparison is paired,
which removes the variance of the tasks themselves. For each temperature (the agent's own
episodes, then each sampling temperature of ``--samples``) it gives:

- per task, the pairs and each run's successes, and the difference;
- the counts of the 2x2 table (both solved, only A, only B, neither);
- the exact McNemar p-value (discordant pairs only; pairs taken as independent);
- the 95% CI of rate(A) - rate(B) over the pairs (Newcombe's method 10);
- a 95% paired bootstrap CI that resamples whole tasks with a fixed seed, which stays
  honest when a task has several correlated episodes (``--episodes``, ``--samples``).

Episodes that failed on infrastructure errors are not scored and do not pair.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from harness.errors import ConfigError
from harness.evaluation.stats import (
    mcnemar_exact,
    paired_difference_ci,
    task_bootstrap_ci,
    wilson_interval,
)
from harness.evaluation.summary import latest
from harness.records import EpisodeRecord, read_results
from harness.runner import RESULTS_FILE


@dataclass(frozen=True)
class Pair:
    """One episode both runs played: its key and whether each run solved it."""

    task: str
    seed: int | None
    index: int
    temperature: float | None
    a: bool
    b: bool


def load_run(path: Path, name: str) -> list[EpisodeRecord]:
    """The scored episodes of a run folder (its results.jsonl) or of a results.jsonl."""
    path = Path(path)
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.is_file():
        what = f"a folder without {RESULTS_FILE}" if path.is_dir() else "not there"
        raise ConfigError(f"{name}: expected a `cua eval` run folder (with {RESULTS_FILE}) or a "
                          f"{RESULTS_FILE}, got {path}, which is {what}; pass the --out of a run")
    records = [r for r in latest(read_results(file)) if r.error is None]
    if not records:
        raise ConfigError(f"{name}: expected scored episodes in {file}, got none (an empty run, or "
                          "every episode failed on infrastructure errors); rerun it with --resume")
    return records


def pair_episodes(a: Iterable[EpisodeRecord], b: Iterable[EpisodeRecord]
                  ) -> tuple[list[Pair], int, int]:
    """The pairs, and how many episodes of A and of B found no partner."""
    by_key_b = {(r.task, r.seed, r.index, r.temperature): r for r in b}
    pairs, lone_a = [], 0
    for record in a:
        key = (record.task, record.seed, record.index, record.temperature)
        partner = by_key_b.pop(key, None)
        if partner is None:
            lone_a += 1
            continue
        pairs.append(Pair(record.task, record.seed, record.index, record.temperature,
                          a=record.success, b=partner.success))
    return sorted(pairs, key=lambda p: (p.task, p.index)), lone_a, len(by_key_b)


class TaskPairs(TypedDict):
    """One task's pairs and each run's successes among them."""

    pairs: int
    success_a: int
    success_b: int
    difference: float


class Bootstrap(TypedDict):
    resamples: int
    seed: int


class PairFigures(TypedDict):
    """Every figure of one group of pairs (``compare_pairs``)."""

    pairs: int
    tasks: int
    rate_a: float
    ci_a: list[float]
    rate_b: float
    ci_b: list[float]
    difference: float
    difference_ci: list[float]
    bootstrap_ci: list[float]
    bootstrap: Bootstrap
    both: int
    only_a: int
    only_b: int
    neither: int
    mcnemar_p: float
    per_task: dict[str, TaskPairs]


class PairGroup(PairFigures):
    """The figures of the pairs played at one temperature (None: the agents' own)."""

    temperature: float | None


class Comparison(TypedDict):
    """The comparison of two runs (``compare_runs``)."""

    run_a: str
    run_b: str
    unpaired_a: int
    unpaired_b: int
    groups: list[PairGroup]


def compare_pairs(pairs: list[Pair], *, resamples: int = 2000, seed: int = 0) -> PairFigures:
    """Every figure of one group of pairs (see the module docstring); rates are A's and B's."""
    both = sum(p.a and p.b for p in pairs)
    only_a = sum(p.a and not p.b for p in pairs)
    only_b = sum(p.b and not p.a for p in pairs)
    n = len(pairs)
    per_task: dict[str, TaskPairs] = {}
    for pair in pairs:
        row = per_task.setdefault(pair.task, {"pairs": 0, "success_a": 0, "success_b": 0, "difference": 0.0})
        row["pairs"] += 1
        row["success_a"] += int(pair.a)
        row["success_b"] += int(pair.b)
    for row in per_task.values():
        row["difference"] = round((row["success_a"] - row["success_b"]) / row["pairs"], 4)
    successes_a, successes_b = both + only_a, both + only_b
    bootstrap = task_bootstrap_ci([(r["success_a"] - r["success_b"], r["pairs"]) for r in per_task.values()],
                                  resamples=resamples, seed=seed)
    return {
        "pairs": n, "tasks": len(per_task),
        "rate_a": round(successes_a / n, 4), "ci_a": _rounded(wilson_interval(successes_a, n)),
        "rate_b": round(successes_b / n, 4), "ci_b": _rounded(wilson_interval(successes_b, n)),
        "difference": round((only_a - only_b) / n, 4),
        "difference_ci": _rounded(paired_difference_ci(both, only_a, only_b, n - both - only_a - only_b)),
        "bootstrap_ci": _rounded(bootstrap), "bootstrap": {"resamples": resamples, "seed": seed},
        "both": both, "only_a": only_a, "only_b": only_b, "neither": n - both - only_a - only_b,
        "mcnemar_p": round(mcnemar_exact(only_a, only_b), 6),
        "per_task": dict(sorted(per_task.items())),
    }


def compare_runs(run_a: Path, run_b: Path, *, resamples: int = 2000, seed: int = 0) -> Comparison:
    """The comparison of two runs: one group of figures per temperature both ran."""
    a, b = load_run(run_a, "RUN_A"), load_run(run_b, "RUN_B")
    pairs, lone_a, lone_b = pair_episodes(a, b)
    if not pairs:
        raise ConfigError(
            f"expected episodes both runs played (same task, seed, index and temperature), got none: "
            f"RUN_A has {_tasks(a)}, RUN_B has {_tasks(b)}; run both with the same --suite, --seed "
            "and --episodes")
    groups: dict[float | None, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.temperature, []).append(pair)
    order = sorted(groups, key=lambda t: -1.0 if t is None else t)
    return {
        "run_a": str(run_a), "run_b": str(run_b), "unpaired_a": lone_a, "unpaired_b": lone_b,
        "groups": [{"temperature": t, **compare_pairs(groups[t], resamples=resamples, seed=seed)}
                   for t in order],
    }


def _rounded(interval: tuple[float, float]) -> list[float]:
    return [round(bound, 4) for bound in interval]


def _tasks(records: list[EpisodeRecord]) -> str:
    tasks = sorted({r.task for r in records})
    shown = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    seeds = sorted({r.seed for r in records if r.seed is not None})
    span = f"seeds {seeds[0]}-{seeds[-1]}" if seeds else "no seeds"
    return f"{len(records)} episodes of {shown} ({span})"
