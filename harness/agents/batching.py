"""Let many concurrent episodes share one batched model call.

A model agent wraps its batch function in a :class:`Batcher`; each episode awaits
``batcher(request)`` and the batcher calls the function once for up to ``max_batch``
requests, waiting at most ``max_wait_ms`` after the first one for others to join::

    batcher = Batcher(model.generate_batch, max_batch=8, max_wait_ms=5)
    reply = await batcher(prompt)          # from any number of concurrent episodes

A failure of the batch function reaches every request of that batch.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from harness.errors import ConfigError

In = TypeVar("In")
Out = TypeVar("Out")


class Batcher(Generic[In, Out]):
    """Collects concurrent requests into calls of ``fn(list of requests) -> list of replies``."""

    def __init__(self, fn: Callable[[list[In]], Awaitable[Sequence[Out]]], *, max_batch: int = 8,
                 max_wait_ms: float = 5.0) -> None:
        if max_batch < 1 or max_wait_ms < 0:
            raise ConfigError(f"expected max_batch >= 1 and max_wait_ms >= 0, got "
                              f"max_batch={max_batch}, max_wait_ms={max_wait_ms}")
        self.fn = fn
        self.max_batch = max_batch
        self.max_wait_ms = max_wait_ms
        #: how many calls of each batch size were made
        self.batch_sizes: Counter[int] = Counter()
        self._pending: list[tuple[In, asyncio.Future[Out]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._running: set[asyncio.Task[None]] = set()

    @property
    def calls(self) -> int:
        """Batch calls made so far."""
        return sum(self.batch_sizes.values())

    async def __call__(self, request: In) -> Out:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Out] = loop.create_future()
        self._pending.append((request, future))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_wait_ms / 1000, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._pending:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch:]
            task = asyncio.ensure_future(self._run(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run(self, batch: list[tuple[In, asyncio.Future[Out]]]) -> None:
        self.batch_sizes[len(batch)] += 1
        try:
            replies = list(await self.fn([request for request, _ in batch]))
            if len(replies) != len(batch):
                raise RuntimeError(f"expected {len(batch)} replies from the batch function, "
                                   f"got {len(replies)}")
        except BaseException as exc:  # every waiter of the batch learns of the failure
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), reply in zip(batch, replies, strict=True):
            if not future.done():
                future.set_result(reply)
