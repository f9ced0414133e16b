"""FSM sites and MiniWoB pages as desktop tasks: in windowed Chromium, and in the Tk app.

Both FSM tasks are ``FSMTask``\\ s on a desktop sandbox: the session, the verdicts, the
goal and the oracle's shortest path are the site server's, exactly as for the browser's
``fsm`` tasks. What differs is the surface:

- ``ChromiumFSMTask`` opens the session in a real Chromium window (browser chrome in the
  screenshot); settling reads the page over CDP, and the oracle's page coordinates are
  moved by where the viewport lies on the screen.
- ``TkFSMTask`` starts the Tk app (``fsm_sites.serving.tkapp``, its own process, talking to the
  site app as the browser's page does, with no control token); settling waits for the app's state file to show the session's seq, and the
  oracle locates widgets by the boxes that file lists.

``ChromiumMiniWoBTask`` runs a MiniWoB++ page in the Chromium window, rewarded by the
page's own globals: the window's managed policy keeps the agent from running script there
(``sandboxes.browser.policy``), and a reload or navigation ends the episode unrewarded.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict, cast

from fsm_sites.engine.machine import Edge
from fsm_sites.serving.client import SessionView, SiteClient
from harness.actions import Action, Click, Drag, Key, Move, TypeText, Wait
from harness.errors import PageLeft, TaskError
from harness.tasks.base import Task, TaskSetup, Validation, require_desktop
from harness.tasks.fsm import FSMTask, library_tasks, step_budget
from harness.tasks.fsm_oracle import next_action, probe_expression
from harness.tasks.fsm_settle import site_call
from harness.tasks.miniwob import ORACLE_TARGETS, STATE_JS, MiniWoBTask, left_page
from sandboxes.actions import POINTER_ACTIONS
from sandboxes.base import Sandbox, SandboxRequest
from sandboxes.desktop.chromium import DesktopChromium
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.errors import SandboxEvaluationError

if TYPE_CHECKING:
    from harness.resources import TaskResources


class TkElement(TypedDict):
    """One widget (or part of one) in the Tk app's state file (``tkapp.write_state``)."""

    id: str
    value: str
    kind: str
    part: str | None
    box: tuple[int, int, int, int]
    text: NotRequired[str]
    focused: NotRequired[bool]
    selected: NotRequired[bool]
    stops: NotRequired[list[tuple[str, int, int]]]
    at: NotRequired[tuple[int, int]]
    items: NotRequired[list[tuple[str, int, int, int, int]]]


class TkAppState(TypedDict):
    """The Tk app's state file: the session event it shows and its widgets."""

    seq: int
    page: str | None
    pid: int
    viewable: bool
    elements: list[TkElement]

_SHOWN_TIMEOUT_S = 10.0
#: How long a MiniWoB read that failed waits for the browser to report the page gone.
_LEFT_WAIT_S = 1.0
#: Where this process's fsm_sites lies: the Tk app runs the same code (not whichever copy
#: the interpreter would find first, e.g. another checkout's editable install).
_SOURCE_ROOT = str(Path(__file__).resolve().parents[2])


class _DesktopFSMTask(FSMTask):
    """An FSM task whose session is shown by a desktop app."""

    sandbox_request = SandboxRequest(kind="desktop")
    #: the desktop apps show the session's state; a jump would need them to reload: restore by replay
    jump = None  # type: ignore[assignment]

    def __init__(self, site: str, goal: str, *, name: str) -> None:
        tasks = [t for t in library_tasks(site) if t.id == goal]
        if not tasks:
            raise TaskError(f"expected goal {goal!r} of library site {site!r}, got none")
        super().__init__(tasks, name=name)
        self.id = f"desktop:{name}"
        self._desktop: DesktopSandbox | None = None

    async def _open_session(self, sandbox: Sandbox, seed: int | None,
                            resources: TaskResources) -> tuple[DesktopSandbox, SiteClient, SessionView]:
        desktop = self._desktop = require_desktop(sandbox, self.id)
        await desktop.reset()
        layout_seed = 0 if seed is None else int(seed)
        self.task = self.choices[layout_seed % len(self.choices)]
        sites = await self._ensure_site(resources)
        view = await site_call(sites.create_session(self.task.site, goal=self.task.goal,
                                                     start_state=self.task.start_state, seed=layout_seed))
        self._session, self._cursor, self.step_events, self._jump_view = view.id, 0, [], None
        return desktop, sites, view

    def _task_setup(self, view: SessionView, start_url: str, origins: tuple[str, ...]) -> TaskSetup:
        return TaskSetup(instruction=self.task.instruction, start_url=start_url, allowed_origins=origins,
                         fsm_state=view.state, max_steps=step_budget(self.task),
                         start_distance=view.distance, goal=self.task.goal)


class ChromiumFSMTask(_DesktopFSMTask):
    """An FSM site in a windowed Chromium on the desktop."""

    _chromium: DesktopChromium | None = None

    async def setup(self, sandbox: Sandbox, *, seed: int | None, resources: TaskResources) -> TaskSetup:
        desktop, sites, view = await self._open_session(sandbox, seed, resources)
        self._chromium = await DesktopChromium.launch(desktop, view.url, allowed_origins=(sites.site_url,))
        await self._settle(self._chromium, sites, view.id)
        # The page shows the session's state; the window may still be drawing (its tab strip
        # animates the new tab, late on a loaded machine): the first screenshot waits for it.
        await desktop.settle()
        return self._task_setup(view, view.url, (sites.site_url,))

    async def _shown(self, sandbox: Sandbox, sites: SiteClient, sid: str) -> None:
        await self._settle(self._require_chromium(), sites, sid)

    async def _edge_action(self, sandbox: Sandbox, edge: Edge, page: str) -> Action:
        chromium = self._require_chromium()
        probe = await chromium.evaluate(probe_expression(edge))
        return await _on_screen(chromium, next_action(edge, probe, page))

    def _require_chromium(self) -> DesktopChromium:
        if self._chromium is None:
            raise TaskError(f"expected setup() before using task {self.id}, got no Chromium")
        return self._chromium


async def _on_screen(chromium: DesktopChromium, action: Action) -> Action:
    """A pointer action in page coordinates moved to screen coordinates."""
    if not isinstance(action, POINTER_ACTIONS):
        return action
    ox, oy = await chromium.viewport_origin()
    width, height = chromium.sandbox.config.width, chromium.sandbox.config.height
    update: dict[str, int] = {"x": min(width - 1, action.x + ox), "y": min(height - 1, action.y + oy)}
    if isinstance(action, Drag):
        update.update(to_x=min(width - 1, action.to_x + ox), to_y=min(height - 1, action.to_y + oy))
    return action.model_copy(update=update)


class TkFSMTask(_DesktopFSMTask):
    """An FSM site rendered natively by the Tk app, which reports its events to the server."""

    _state_file: Path | None = None
    _app: subprocess.Popen[bytes] | None = None

    async def setup(self, sandbox: Sandbox, *, seed: int | None, resources: TaskResources) -> TaskSetup:
        desktop, sites, view = await self._open_session(sandbox, seed, resources)
        self._state_file = desktop.state_dir / "tkapp.json"
        width, height = desktop.config.width, desktop.config.height
        # ``--name=value``: a session id may begin with "-" (token_urlsafe's alphabet has it),
        # which argparse would take for an option
        self._app = desktop.launch(
            [sys.executable, "-m", "fsm_sites.serving.tkapp", f"--site={sites.site_url}", f"--session={view.id}",
             f"--state-file={self._state_file}", f"--geometry={width - 8}x{height - 28}+0+0"],
            env={"PYTHONPATH": _SOURCE_ROOT}, log=self._log_file())
        await self._wait_seq(view.seq, desktop.config.start_timeout_s + _SHOWN_TIMEOUT_S)
        await desktop.wait_for_window(lambda w: bool(w.title), "the Tk app")
        await desktop.settle()
        return self._task_setup(view, "desktop://tk/" + view.site, ())

    async def _shown(self, sandbox: Sandbox, sites: SiteClient, sid: str) -> None:
        view = await site_call(sites.session(sid))
        await self._wait_seq(view.seq, _SHOWN_TIMEOUT_S)
        await require_desktop(sandbox, self.id).settle()

    async def _edge_action(self, sandbox: Sandbox, edge: Edge, page: str) -> Action:
        sites, sid = self._require()
        state = self._app_state()
        if state is None or state["page"] != page or state["seq"] != (await site_call(sites.session(sid))).seq:
            return Wait(seconds=0.2)
        return tk_action(edge, state["elements"])

    async def _wait_seq(self, seq: int, timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            if self._app is not None and self._app.poll() == 0:  # its window was closed: the agent's doing
                raise PageLeft(f"the Tk app of {self.id} was closed (its window); the session can no "
                               "longer be shown")
            state = self._app_state()  # the app's last word, which outlives it
            if state is not None and state["seq"] == seq and state.get("viewable"):
                return
            if self._app is not None and self._app.poll() is not None:
                raise TaskError(f"expected the Tk app of {self.id} to show event seq {seq}, got its exit "
                                f"(code {self._app.returncode}); its output: {self._app_output()!r}")
            if loop.time() > deadline:
                shown = state["seq"] if state else None
                raise TaskError(f"expected the Tk app of {self.id} to show event seq {seq} within "
                                f"{timeout_s}s, got {shown}; check that it runs (python -m fsm_sites.serving.tkapp)")
            await asyncio.sleep(0.01)

    def _app_output(self) -> str:
        """The end of what the Tk app printed (its traceback, if it crashed)."""
        try:
            return self._log_file().read_text(encoding="utf-8", errors="replace")[-2000:]
        except OSError as exc:
            return f"(unreadable: {exc})"

    def _log_file(self) -> Path:
        """Where the Tk app's output goes: beside its state file."""
        return self._require_state_file().with_suffix(".log")

    def _require_state_file(self) -> Path:
        if self._state_file is None:
            raise TaskError(f"expected setup() before using task {self.id}, got no Tk app")
        return self._state_file

    def _app_state(self) -> TkAppState | None:
        try:
            return cast(TkAppState, dict(json.loads(self._require_state_file().read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            return None


def _center(box: Sequence[int]) -> Click:
    x, y, w, h = box
    return Click(x=max(0, x + w // 2), y=max(0, y + h // 2))


def tk_action(edge: Edge, elements: list[TkElement]) -> Action:
    """The one action on the Tk app's widgets that moves toward firing ``edge``."""
    mine = [e for e in elements if e["id"] == edge.element]
    if edge.event == "hover":  # a tooltip's label sends hover when the pointer enters it
        for element in mine:
            x, y, w, h = element["box"]
            return Move(x=max(0, x + w // 2), y=max(0, y + h // 2))
    if edge.event in ("change", "move"):
        drag = _tk_drag(edge, mine)
        if drag is not None:
            return drag
    elif edge.event == "select":
        for element in mine:
            for value, *box in element.get("items", []):
                if value == edge.value:
                    return _center(box)
    elif edge.event == "input":
        field = next((e for e in mine if e["part"] == "field"), None)
        if field is not None:
            wanted, text = edge.value or "", field["text"]
            if not field["focused"]:
                return _center(field["box"])
            if text == wanted:
                return Key(keys=("enter",))
            if text and not field["selected"]:
                return Key(keys=("ctrl", "/"))  # Tk's select-all in an entry
            return TypeText(text=wanted) if wanted else Key(keys=("backspace",))
    else:
        # an option of its own first (a table's pager button "2" before the row whose value is "2")
        for element in sorted(mine, key=lambda e: e["part"] != f"option:{edge.value}"):
            if element["part"] == f"option:{edge.value}" or (
                    element["part"] is None and element["value"] == edge.value):
                return _center(element["box"])
        for element in mine:
            if element["part"] is None:
                return _center(element["box"])
    raise TaskError(f"expected the Tk app to show element {edge.element!r} for {edge.event}, "
                    f"got elements {sorted({e['id'] for e in elements})}")


def _tk_drag(edge: Edge, mine: list[TkElement]) -> Drag | None:
    """A slider's scale dragged to the value's stop, or a sortable row's handle dragged to
    where the other rows' middles put it at ``to`` (``from>to``)."""
    if edge.event == "change":
        scale = next((e for e in mine if e["part"] == "slider"), None)
        stop = next((s for s in scale["stops"] if s[0] == edge.value), None) if scale else None
        if scale is None or stop is None:
            return None
        (x, y), (to_x, to_y) = scale["at"], stop[1:]
        return Drag(x=x, y=y, to_x=to_x, to_y=to_y)
    src, _, dst = (edge.value or "").partition(">")
    rows = sorted((e for e in mine if e["part"] == "handle"), key=lambda e: int(e["value"]))
    moving = next((r for r in rows if r["value"] == src), None)
    if moving is None or not dst.isdigit():
        return None
    middles = [r["box"][1] + r["box"][3] // 2 for r in rows if r is not moving]
    to, height = int(dst), moving["box"][3]
    to_y = (middles[0] - height // 4 if to == 0 else middles[-1] + height // 4 if to >= len(middles)
            else (middles[to - 1] + middles[to]) // 2)
    x, y, w, h = moving["box"]
    return Drag(x=x + w // 2, y=y + h // 2, to_x=x + w // 2, to_y=max(0, to_y))


class ChromiumMiniWoBTask(Task):
    """A MiniWoB++ page in a windowed Chromium on the desktop."""

    sandbox_request = SandboxRequest(kind="desktop")

    def __init__(self, name: str) -> None:
        self.page_task = MiniWoBTask(name)
        self.id = f"desktop:chromium-miniwob-{name}"
        self._chromium: DesktopChromium | None = None
        self._documents = 0  # the tab's document count once the episode started

    @property
    def has_oracle(self) -> bool:
        return self.page_task.has_oracle

    async def setup(self, sandbox: Sandbox, *, seed: int | None, resources: TaskResources) -> TaskSetup:
        desktop = require_desktop(sandbox, self.id)
        await desktop.reset()
        url = f"{await resources.miniwob_url()}miniwob/{self.page_task.name}.html"
        self._chromium = await DesktopChromium.launch(desktop, url)
        instruction = await self.page_task.start_episode(self._chromium, seed=seed)
        self._documents = self._chromium.documents
        await desktop.settle()
        return TaskSetup(instruction=instruction, start_url=url, max_steps=10)

    async def validate(self, sandbox: Sandbox, action: Action | None) -> Validation:
        chromium = self._require()
        try:
            state = None if self._left(chromium) else await chromium.evaluate(STATE_JS)
        except SandboxEvaluationError:
            # the page went away under the read: wait for the browser's word on it
            loop = asyncio.get_running_loop()
            deadline = loop.time() + _LEFT_WAIT_S
            while not self._left(chromium) and loop.time() < deadline:
                await asyncio.sleep(0.01)
            if not self._left(chromium):
                raise
            state = None
        if state is None:
            return left_page("the task's page was closed" if chromium.closed
                             else f"the page was reloaded or left for {chromium.url}")
        return self.page_task.judge(state)

    def _left(self, chromium: DesktopChromium) -> bool:
        """Whether the episode's document is gone (reloaded, navigated, closed): the
        browser's events say so, not the page."""
        return chromium.closed or chromium.documents != self._documents

    async def cheat(self, sandbox: Sandbox) -> Action | None:
        target = ORACLE_TARGETS.get(self.page_task.name)
        if target is None:
            return None
        chromium = self._require()
        center = await chromium.evaluate(
            f"(() => {{ const el = {target}; if (!el) return null; const r = el.getClientRects()[0];"
            " return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)]; })()")
        if not isinstance(center, list):
            raise TaskError(f"expected the oracle target of {self.id} on the page, got none")
        return await _on_screen(chromium, Click(x=int(center[0]), y=int(center[1])))

    def _require(self) -> DesktopChromium:
        if self._chromium is None:
            raise TaskError(f"expected setup() before using task {self.id}, got no Chromium")
        return self._chromium
