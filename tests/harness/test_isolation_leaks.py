"""500 episodes in isolated sandboxes leave nothing behind and do not grow memory by 10%.

The run is ``benchmarks.bench_leaks.leak_run`` (the benchmark records the same numbers in
BENCHMARKS.md): a short FSM task, so the run is about episodes, and sandboxes replaced
every 125 episodes, so browsers, jails and namespaces are made and removed along the way
and each half of the run is one life of the sandboxes (memory growth compares the
halves' mean samples).
Seeds cycle over 25, so the FSM site server's page cache (a bounded cache of rendered
pages, keyed by seed, in this process) is full before the first sample: what the test
watches is what sandboxes and episodes leave, not that cache filling up.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_leaks import leak_run


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_five_hundred_isolated_episodes_leave_nothing_behind() -> None:
    result = await leak_run(500, concurrency=2, sandbox_episodes=125, sample_every=25, seeds=25)
    assert result["succeeded"] == 500 and result["errors"] == 0
    samples = result["samples"]
    assert len(samples) >= 16, samples
    # Chromium's process count varies a little (a spare renderer, a fresh browser still
    # starting its helpers), but it must not climb: no sample above the first ones' most.
    assert max(s["processes"] for s in samples) <= max(s["processes"] for s in samples[:4]), samples
    assert all(s["zombies"] == 0 for s in samples)
    assert result["pss_growth"] < 0.10, samples
    assert result["python_rss_growth"] < 0.10, samples
    assert result["python_rss_last_over_first"] < 0.10, samples
    assert result["leftover_processes"] == []
    assert all(not left for left in result["leftover_other"].values()), result["leftover_other"]
