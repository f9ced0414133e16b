"""The Sandbox protocol every provider implements.

A sandbox owns one isolated UI surface (a browser context, an X display). It knows
nothing about tasks, FSMs or models: it starts, resets to a URL, takes screenshots,
executes typed actions, and reports its health. Infrastructure failures raise
``sandboxes.errors.SandboxError`` subclasses; agent mistakes (a click outside the
viewport, navigation to a blocked origin) are returned as an error string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from harness.actions import Action


@dataclass(frozen=True)
class Screenshot:
    """An encoded screenshot."""

    data: bytes
    format: Literal["png", "jpeg"]
    width: int
    height: int


@runtime_checkable
class Sandbox(Protocol):
    """One isolated surface for one episode at a time."""

    async def start(self) -> None:
        """Start the underlying process(es). Idempotent."""

    async def reset(
        self,
        url: str,
        *,
        allowed_origins: tuple[str, ...] = (),
        keep_page: bool = False,
        content: str | None = None,
    ) -> None:
        """Begin a fresh episode (fresh cookies, storage, cache) at ``url``.

        Navigation outside ``allowed_origins`` (scheme://host:port) is blocked; an empty
        tuple allows only the origin of ``url``. ``keep_page=True`` lets a sandbox reuse
        its surface for pages that keep no client-side state beyond cookies and storage
        (which it still clears), and ``content`` is the HTML at ``url`` when the caller has
        it; sandboxes without such a fast path ignore both.
        """

    async def screenshot(self) -> Screenshot:
        """Capture the current viewport."""

    async def execute(self, action: Action) -> str | None:
        """Perform an action; return None on success or a message describing the agent's error."""

    async def evaluate(self, expression: str) -> object:
        """Evaluate a JavaScript expression in the page (browser sandboxes; tasks use it
        to read page state). Desktop sandboxes raise NotImplementedError."""

    @property
    def url(self) -> str:
        """The current URL (or window title for desktops)."""

    async def health(self) -> bool:
        """True while the sandbox can serve an episode."""

    async def close(self) -> None:
        """Release everything. Idempotent."""
