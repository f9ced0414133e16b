"""The statistics of evaluation: confidence intervals of success rates and paired tests.

Pure functions of counts, checked against hand-worked numbers in the tests:

- ``wilson_interval(k, n)``: the 95% Wilson score interval of a success rate. Unlike the
  normal ("Wald") interval it stays inside [0, 1] and is not empty at 0/n or n/n.
- ``mcnemar_exact(b, c)``: the exact (binomial) two-sided McNemar p-value of paired
  outcomes, from the discordant pairs only (``b``: A solved it and B did not; ``c``: the
  other way round).
- ``paired_difference_ci(a, b, c, d)``: the 95% CI of the difference of two paired success
  rates (Newcombe 1998, method 10: Wilson intervals of each rate combined with the
  correlation of the pairs).
- ``task_bootstrap_ci(per_task, ...)``: a paired bootstrap that resamples whole tasks
  (episodes of one task are not independent, e.g. k samples of one task), fixed seed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TypedDict

#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n``; (0.0, 1.0) for n = 0 (no
    episodes say nothing)."""
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"expected 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # at 0/n and n/n the bound is exactly 0 or 1; floating point leaves a hair either side
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: twice the smaller binomial tail of ``b`` out of
    ``b + c`` discordant pairs at p = 1/2 (capped at 1); 1.0 with no discordant pair."""
    if b < 0 or c < 0:
        raise ValueError(f"expected counts >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired_difference_ci(both: int, only_a: int, only_b: int, neither: int,
                         z: float = Z95) -> tuple[float, float]:
    """The CI of rate(A) - rate(B) over paired episodes (Newcombe's method 10).

    ``both``: pairs both solved; ``only_a``: A solved, B did not; ``only_b``: the other way;
    ``neither``: both failed. Refuses no pairs.
    """
    n = both + only_a + only_b + neither
    if min(both, only_a, only_b, neither) < 0 or n == 0:
        raise ValueError(f"expected counts >= 0 and at least one pair, got {both}, {only_a}, "
                         f"{only_b}, {neither}")
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson_interval(both + only_a, n, z)
    l2, u2 = wilson_interval(both + only_b, n, z)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / math.sqrt(margins) if margins else 0.0
    lower = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    upper = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    diff = p1 - p2
    return (max(-1.0, diff - lower), min(1.0, diff + upper))


def task_bootstrap_ci(per_task: Sequence[tuple[int, int]], *, resamples: int = 2000,
                      seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile CI of the mean paired difference, resampling whole tasks.

    ``per_task`` holds, for each task, (sum over its pairs of success_A - success_B, number
    of pairs). A resample draws as many tasks with replacement and takes the summed
    difference over the summed pairs; the seed is fixed, so a rerun gives the same CI.
    """
    if not per_task or any(pairs <= 0 for _, pairs in per_task):
        raise ValueError(f"expected at least one task, each with pairs, got {list(per_task)[:5]}")
    rng = random.Random(seed)
    count = len(per_task)
    means = []
    for _ in range(resamples):
        drawn = [per_task[rng.randrange(count)] for _ in range(count)]
        means.append(sum(d for d, _ in drawn) / sum(p for _, p in drawn))
    means.sort()
    tail = (1 - level) / 2
    low = means[max(0, math.floor(tail * resamples))]
    high = means[min(resamples - 1, math.ceil((1 - tail) * resamples) - 1)]
    return (low, high)


class RateFigures(TypedDict):
    """The figures of a summary that ``summary_rate`` reads (summary.json's figures have more)."""

    success_rate: float
    success_ci: list[float]


def format_rate(rate: float, ci: Sequence[float], digits: int = 1) -> str:
    """A success rate with its CI for a table: ``"50.0% [23.7–76.3]"``."""
    low, high = ci
    return f"{100 * rate:.{digits}f}% [{100 * low:.{digits}f}–{100 * high:.{digits}f}]"


def summary_rate(figures: RateFigures, digits: int = 1) -> str:
    """A summary's success rate with its 95% Wilson interval (``success_rate`` and
    ``success_ci`` of summary.json's figures): ``50.0% [23.7–76.3]``. The pages that show
    rates pass it to their templates as ``rate``."""
    return format_rate(figures["success_rate"], figures["success_ci"], digits)


def format_successes(successes: int, n: int, digits: int = 0) -> str:
    """``successes`` of ``n`` as a rate with its Wilson CI: ``"30% [11–60] (3/10)"``."""
    rate = successes / n if n else 0.0
    return f"{format_rate(rate, wilson_interval(successes, n), digits)} ({successes}/{n})"
