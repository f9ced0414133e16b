"""Two rules for tearing sandboxes down, so that nothing outlives them:

- ``close_all``: one close that fails does not stop the others (the first error is raised
  after every close ran).
- ``finish_in_thread``: blocking set-up work (a jail, an X server) that runs on a worker
  thread runs to its end even when the caller is cancelled (a timeout, a cancelled
  episode), and is then undone; a cancelled ``asyncio.to_thread`` would leave the thread
  making what nobody will remove.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def close_all(closers: Iterable[Callable[[], Awaitable[object]]]) -> None:
    """Await every closer in order, even after one raised; then raise the first error."""
    first: BaseException | None = None
    for close in closers:
        try:
            await close()
        except BaseException as exc:  # noqa: BLE001 - raised below, once every close ran
            first = first or exc
    if first is not None:
        raise first


async def finish_in_thread(work: Callable[[], T], undo: Callable[[], object]) -> T:
    """``work()`` on a worker thread; if the caller is cancelled meanwhile, wait for the
    work to end, run ``undo()`` (on a thread too) and re-raise the cancellation."""
    future = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        try:
            await asyncio.wait([future])  # the thread cannot be stopped: let it end
        finally:
            await asyncio.to_thread(undo)
        raise
