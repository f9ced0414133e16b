"""The sandbox core every kind implements, the browser interface, and sandbox providers.

A sandbox owns one isolated UI surface (a browser context, an X display). It knows
nothing about tasks, FSMs or models. Every sandbox implements the **core**
(:class:`Sandbox`): start, reset to a clean surface, screenshot, execute a typed action,
health, close. Browser-only abilities (open a URL confined to origins, keep the page
between episodes, evaluate JavaScript, the current URL) live on :class:`Browser`, which
browser tasks ask for; a desktop sandbox implements the core and its own interface.

A **provider** (:class:`SandboxProvider`) makes sandboxes for :class:`SandboxRequest`\\ s
and owns what they share (one Chromium process, a display server, a container). It is
passed into the runner, the env and the explorer, never hard-wired; one provider can
serve many runs.

Infrastructure failures raise ``sandboxes.errors.SandboxError`` subclasses; agent
mistakes (a click outside the viewport, navigation to a blocked origin, parameters the
surface refuses) are returned by ``execute`` as an error string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from sandboxes.actions import Action

SandboxKind = Literal["browser", "desktop"]


@dataclass(frozen=True)
class Screenshot:
    """An encoded screenshot."""

    data: bytes
    format: Literal["png", "jpeg"]
    width: int
    height: int


class UIElement(BaseModel):
    """One interactive element a sandbox shows (for observation modes with elements)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="the element's id on its page (an FSM element id, a DOM id, or e<n>)")
    role: str = Field(description="button, link, textbox, combobox, option, checkbox, radio, tab, ...")
    label: str = Field(description="its visible or accessible name")
    row: str | None = Field(
        default=None, description="the name of the table or list row it sits in (a row's action acts on that row)")
    section: str | None = Field(
        default=None, description="the part of the page it sits in where that is not the main content: "
        "navigation, sidebar, footer or dialog")
    value: str | None = Field(default=None, description="a field's text, or 'checked'")
    x: int = Field(description="left edge in screenshot pixels")
    y: int = Field(description="top edge in screenshot pixels")
    width: int = Field(ge=0, description="width in pixels")
    height: int = Field(ge=0, description="height in pixels")
    enabled: bool = Field(default=True, description="whether it takes input")

    @property
    def center(self) -> tuple[int, int]:
        """The point a click on the element aims at."""
        return self.x + self.width // 2, self.y + self.height // 2


class SandboxRequest(BaseModel):
    """What a task needs from a sandbox; a provider turns it into one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SandboxKind = Field(default="browser", description="the kind of surface")
    viewport: tuple[int, int] | None = Field(
        default=None, description="(width, height) in pixels; None: the provider's default"
    )


@runtime_checkable
class Sandbox(Protocol):
    """The core: one isolated surface for one episode at a time."""

    @property
    def kind(self) -> SandboxKind:
        """What kind of surface this is ("browser", "desktop")."""

    async def start(self) -> None:
        """Start the underlying process(es). Idempotent."""

    async def reset(self) -> None:
        """Begin a fresh episode on a clean surface (fresh context / display state)."""

    async def screenshot(self) -> Screenshot:
        """Capture the surface."""

    async def execute(self, action: Action) -> str | None:
        """Perform an action; None on success, or a message describing the agent's error."""

    async def health(self) -> bool:
        """True while the sandbox can serve an episode."""

    async def close(self) -> None:
        """Release everything. Idempotent."""


@runtime_checkable
class Browser(Sandbox, Protocol):
    """What browser tasks ask for on top of the core."""

    async def reset(
        self,
        url: str | None = None,
        *,
        allowed_origins: tuple[str, ...] = (),
        keep_page: bool = False,
        content: str | None = None,
    ) -> None:
        """Begin a fresh episode (fresh cookies, storage, cache) at ``url`` (None: a blank page).

        Navigation outside ``allowed_origins`` (scheme://host:port) is blocked; an empty
        tuple allows only the origin of ``url``. ``keep_page=True`` lets a sandbox reuse
        its page for pages that keep no client-side state beyond cookies and storage
        (which it still clears), and ``content`` is the HTML at ``url`` when the caller has
        it; sandboxes without such a fast path ignore both.
        """

    async def evaluate(self, expression: str) -> object:
        """Evaluate a JavaScript expression in the page and return its JSON value."""

    async def elements(self) -> list[UIElement]:
        """The interactive elements the viewport shows, in reading order."""

    @property
    def url(self) -> str:
        """The current URL."""


@runtime_checkable
class ReadsAfterActions(Protocol):
    """A browser that can answer a task's read from the round trip that ends each action
    (``BrowserSandbox``), which saves the task a round trip per step."""

    def read_after_actions(self, expression: str | None) -> None:
        """Evaluate ``expression`` at the end of every action (None: stop)."""


@runtime_checkable
class ReportsAddress(Protocol):
    """A browser whose page may report its address itself while its URL stays behind
    (``BrowserSandbox``; an FSM site showing its pages in place)."""

    def show_address(self, url: str) -> None:
        """Take ``url`` as the page's URL until the page's own URL changes."""


@runtime_checkable
class SandboxProvider(Protocol):
    """Makes sandboxes and owns what they share; whoever made the provider closes it."""

    @property
    def kinds(self) -> tuple[SandboxKind, ...]:
        """The kinds of sandbox this provider can make."""

    async def start(self) -> None:
        """Start what the sandboxes share. Idempotent."""

    async def new_sandbox(self, request: SandboxRequest) -> Sandbox:
        """A new, started sandbox for ``request``; the caller closes it."""

    async def close(self) -> None:
        """Close every sandbox made here and what they share. Idempotent."""
