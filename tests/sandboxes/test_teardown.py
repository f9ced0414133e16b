"""The teardown rules (sandboxes.teardown): every close runs; cancelled set-up is undone."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sandboxes.teardown import close_all, finish_in_thread


async def test_close_all_runs_every_close_and_raises_the_first_error() -> None:
    ran: list[str] = []

    def closer(name: str, error: Exception | None = None):
        async def close() -> None:
            ran.append(name)
            if error is not None:
                raise error
        return close

    with pytest.raises(RuntimeError, match="first"):
        await close_all([closer("a"), closer("b", RuntimeError("first")), closer("c"),
                         closer("d", ValueError("second"))])
    assert ran == ["a", "b", "c", "d"]
    await close_all([])


async def test_finish_in_thread_returns_the_work_and_undoes_nothing() -> None:
    undone: list[int] = []
    assert await finish_in_thread(lambda: 42, lambda: undone.append(1)) == 42
    assert undone == []


async def test_a_cancelled_caller_waits_for_the_work_then_undoes_it() -> None:
    started, gate = threading.Event(), threading.Event()
    events: list[str] = []

    def work() -> str:
        started.set()
        gate.wait(30)
        events.append("made")
        return "thing"

    task = asyncio.ensure_future(finish_in_thread(work, lambda: events.append("undone")))
    assert await asyncio.to_thread(started.wait, 30)
    task.cancel()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert events == ["made", "undone"]  # undone after the work ended, not before
