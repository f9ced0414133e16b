"""Episodes in isolated sandboxes leave nothing behind and do not grow memory.

A short run of ``benchmarks.bench_leaks.leak_run`` (the benchmark runs it for 500 episodes
and records the numbers in BENCHMARKS.md): a short FSM task, so the run is about episodes,
and sandboxes replaced every 10 episodes, so browsers, jails and namespaces are made and
removed along the way; with 2 at once each half of the run is one life of the sandboxes
(memory growth compares the halves' mean samples).
Seeds cycle over 4, so the FSM site server's page cache (a bounded cache of rendered
pages, keyed by seed, in this process) is full before the first sample: what the test
watches is what sandboxes and episodes leave, not that cache filling up.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_leaks import leak_run


@pytest.mark.slow
async def test_isolated_episodes_leave_nothing_behind() -> None:
    result = await leak_run(40, concurrency=2, sandbox_episodes=10, sample_every=4, seeds=4)
    assert result["succeeded"] == 40 and result["errors"] == 0
    samples = result["samples"]
    assert len(samples) >= 6, samples
    assert {s["episode"] <= 20 for s in samples} == {True, False}, samples  # both halves
    # Chromium's process count varies a little (a spare renderer, a fresh browser still
    # starting its helpers), but it must not climb: no sample above the first ones' most.
    assert max(s["processes"] for s in samples) <= max(s["processes"] for s in samples[:3]), samples
    # A process that just ended may be caught before its parent reaps it, but a zombie
    # must not stay: none in two samples running, none at the end (leftover_processes).
    zombies = [set(s["zombie_processes"]) for s in samples]
    assert not any(a & b for a, b in zip(zombies, zombies[1:], strict=False)), zombies
    # RSS, not PSS: PSS splits pages shared with other programs' Chromium on a shared
    # machine and swings by 15% with them over a run this short (the benchmark's 500
    # episodes record PSS too).
    assert result["rss_growth"] < 0.10, samples
    assert result["python_rss_growth"] < 0.10, samples
    assert result["leftover_processes"] == []
    assert all(not left for left in result["leftover_other"].values()), result["leftover_other"]
