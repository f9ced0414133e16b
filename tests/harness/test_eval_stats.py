"""The evaluation's statistics against numbers worked by hand (z = 1.959964, z^2 = 3.841459)."""

from __future__ import annotations

import pytest

from harness.evaluation.stats import (
    format_successes,
    mcnemar_exact,
    paired_difference_ci,
    task_bootstrap_ci,
    wilson_interval,
)


def test_wilson_interval_by_hand() -> None:
    # 3/10: centre (0.3 + 0.192073) / 1.384146 = 0.355508; half 1.416009 * sqrt(0.021 + 0.009604)
    # = 1.416009 * 0.174939 = 0.247717
    low, high = wilson_interval(3, 10)
    assert low == pytest.approx(0.107791, abs=1e-6) and high == pytest.approx(0.603222, abs=1e-6)
    # 0/10: the upper bound is z^2 / (n + z^2) = 3.841459 / 13.841459; 10/10 mirrors it
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.277533, abs=1e-6))
    assert wilson_interval(10, 10) == (pytest.approx(1 - 0.277533, abs=1e-6), 1.0)
    # 1 task of 8 (the held-out set): centre 0.365091 / 1.480182 = 0.246653, half
    # 1.324137 * sqrt(0.013672 + 0.015006) = 0.224236: 12.5% is anywhere between 2% and 47%
    assert wilson_interval(1, 8) == (pytest.approx(0.022417, abs=1e-5), pytest.approx(0.470889, abs=1e-5))
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes <= n"):
        wilson_interval(4, 3)
    assert format_successes(3, 10) == "30% [11–60] (3/10)"


def test_mcnemar_exact_by_hand() -> None:
    # b=1, c=6: 2 * P(X <= 1), X ~ Bin(7, 1/2) = 2 * (1 + 7) / 128
    assert mcnemar_exact(1, 6) == pytest.approx(16 / 128) == mcnemar_exact(6, 1)
    # b=0, c=5: 2 / 32
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    # balanced discordance, and no discordant pair at all, say nothing
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    # b=2, c=10: 2 * (1 + 12 + 66) / 4096
    assert mcnemar_exact(2, 10) == pytest.approx(158 / 4096)


def test_paired_difference_ci_by_hand() -> None:
    """Newcombe's method 10 on 10 pairs: both 2, only A 3, only B 1, neither 4.

    p1 = 0.5 (Wilson 0.236593-0.763407), p2 = 0.3 (Wilson 0.107791-0.603222),
    phi = (2*4 - 3*1) / sqrt(5*5*3*7) = 0.218218;
    lower = sqrt(0.263407^2 - 2 phi 0.263407 * 0.303222 + 0.303222^2) = sqrt(0.126467) = 0.355622,
    upper = sqrt(0.263407^2 - 2 phi 0.263407 * 0.192209 + 0.192209^2) = sqrt(0.084231) = 0.290226.
    """
    low, high = paired_difference_ci(2, 3, 1, 4)
    assert low == pytest.approx(0.2 - 0.355624, abs=1e-5) and high == pytest.approx(0.2 + 0.290226, abs=1e-5)
    # identical runs: the difference is exactly 0 and the CI straddles it symmetrically
    low, high = paired_difference_ci(3, 0, 0, 5)
    assert low == pytest.approx(-high) and low < 0 < high
    with pytest.raises(ValueError, match="at least one pair"):
        paired_difference_ci(0, 0, 0, 0)


def test_task_bootstrap_is_seeded_and_brackets_the_difference() -> None:
    # every task: A solved both of its pairs, B neither: every resample is exactly +1
    assert task_bootstrap_ci([(2, 2)] * 5) == (1.0, 1.0)
    per_task = [(1, 2), (0, 2), (2, 2), (-1, 2)]  # mean difference 2 / 8 = 0.25
    low, high = task_bootstrap_ci(per_task, seed=3)
    assert task_bootstrap_ci(per_task, seed=3) == (low, high)
    assert -0.5 <= low < 0.25 < high <= 1.0
    with pytest.raises(ValueError, match="at least one task"):
        task_bootstrap_ci([])
