"""FSM-site tasks: an episode is one session of a site server, judged by the site's machine.

The task talks to its site only through a site client (``fsm_sites.serving.client``): the run's
``TaskResources.sites()`` (an in-process server, or a remote one over HTTP) unless it was
given its own.

- ``setup`` creates a session (the task's start state and goal; layout seed = the
  episode seed, 0 when None) and opens it in the browser, confined to the site origin.
- ``validate`` waits for the page to show the state its last event produced, then
  folds the verdicts of the events sent since the previous step into one
  ``StepVerdict`` (before = first before, after = last after). Its reward is 1.0 when the
  goal is reached, else 0.0 (the env's reward mode shapes it, see ``harness.rewards``).
  Done when the goal is reached, or when the goal can no longer be reached (a dead end).
- ``cheat`` returns the next oracle action: the first edge of a shortest path from the
  *current* state, located on the page by ``data-el`` (see ``harness.tasks.fsm_oracle``).

The ``fsm`` suite names every curated library site (``fsm:shop`` draws one of the
site's synthesized tasks per episode, by seed) and every task (``fsm:shop/<task id>``).
The task asks for a browser of its viewport (``sandbox_request``; the desktop one unless
the name ends in ``@phone``, ``@tablet``, ``@laptop`` or ``@WIDTHxHEIGHT``): the same
state and layout seed look different, as real sites do, at another width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from fsm_sites.engine.machine import Edge, Machine
from fsm_sites.engine.state import State
from fsm_sites.errors import SpecInvalid
from fsm_sites.library import list_sites, load_machine, load_site
from fsm_sites.serving.client import SiteClient, SiteUnavailable
from fsm_sites.serving.sessions import SessionError
from fsm_sites.serving.verdict import StepVerdict
from fsm_sites.spec.site import SiteSpec
from fsm_sites.synthesis.tasks import load_tasks
from fsm_sites.validation.validate import load_and_validate
from harness.actions import Action, Done
from harness.errors import PageLeft, TaskError
from harness.tasks.base import PageReader, Task, TaskSetup, Validation, require_browser
from harness.tasks.fsm_oracle import next_action, probe_expression
from harness.tasks.fsm_settle import page_idle, prepare_page, settle, site_call
from sandboxes.base import Sandbox, SandboxRequest
from sandboxes.viewports import VIEWPORTS, parse_viewport

if TYPE_CHECKING:
    from fsm_sites.synthesis.tasks import TaskSpec
    from harness.resources import TaskResources

def step_budget(task: GoalTask | TaskSpec) -> int:
    """Steps an FSM task gets unless the caller sets a limit: room for the oracle's several
    actions per event (focus, select, type, Enter; scrolling) plus slack for an agent."""
    difficulty = task.difficulty or 8
    return 6 * difficulty + 6


def combine_verdicts(verdicts: Sequence[StepVerdict]) -> StepVerdict:
    """Several events in one agent step as one verdict: first before, last after."""
    first, last = verdicts[0], verdicts[-1]
    fired = [v for v in verdicts if v.transition_fired]
    return StepVerdict(
        state_before=first.state_before, state_after=last.state_after, transition_fired=bool(fired),
        transition_id=fired[-1].transition_id if fired else None,
        on_shortest_path=all(v.on_shortest_path for v in verdicts),
        distance_before=first.distance_before, distance_after=last.distance_after,
        goal_reached=last.goal_reached, control_disabled=not fired and any(v.control_disabled for v in verdicts),
    )


class FSMTask(Task):
    """One FSM task (or, given several, one drawn per episode by seed) on a site server."""

    has_oracle = True
    #: the desktop viewport unless the task was given another (``viewport=``)
    sandbox_request = SandboxRequest(kind="browser", viewport=VIEWPORTS["desktop"])

    def __init__(self, task: GoalTask | TaskSpec | Sequence[GoalTask | TaskSpec], sites: SiteClient | None = None, *,
                 name: str | None = None, site_spec: SiteSpec | None = None,
                 reuse_page: bool = True, viewport: tuple[int, int] | None = None,
                 prefetch: bool = False, take_events: bool = True) -> None:
        self.choices: list[GoalTask | TaskSpec] = list(task) if isinstance(task, Sequence) else [task]
        if not self.choices:
            raise TaskError("expected at least one FSM task spec, got none")
        first = self.choices[0]
        self.id = f"fsm:{name or (first.site if len(self.choices) > 1 else f'{first.site}/{first.id}')}"
        #: Open each episode's session in the previous episode's page (see setup).
        self.reuse_page = reuse_page
        if viewport is not None:  # part of the task: its pages respond to the width
            self.sandbox_request = self.sandbox_request.model_copy(update={"viewport": viewport})
        #: Let the page prefetch the pages its events lead to and show one at once (see
        #: docs/fsm_server.md): less waiting per step, more work per step (off by default:
        #: on 2 busy cores it did not pay, see BENCHMARKS.md, issue 12).
        self.prefetch = prefetch
        #: With an in-process site server (``LocalSiteClient``), take the page's events in
        #: the settle instead of letting the page post them (``fsm_settle.hand_back``; it measured
        #: faster, see BENCHMARKS.md, issue 12). A remote server's page always posts them.
        self.take_events = take_events
        self.task: GoalTask | TaskSpec = first
        self.step_events: list[int] = []  # events each step sent (0 = a preparatory action)
        self._given_sites = sites  # None: the run's TaskResources.sites(), fetched per setup
        self._sites: SiteClient | None = sites
        self._site_spec = site_spec  # for sites outside the library (synthesized, user-written)
        self._session: str | None = None
        self._jumps = 0  # jumps shown so far, for a fresh ?v= marker each time
        self._jump_view: tuple[str, int] | None = None  # (marker, session seq) of the last jump
        self._cursor = 0

    # ---- Task protocol ------------------------------------------------------------------
    async def setup(self, sandbox: Sandbox, *, seed: int | None,
                    resources: TaskResources) -> TaskSetup:
        browser = require_browser(sandbox, self.id)
        layout_seed = 0 if seed is None else int(seed)
        self.task = self.choices[layout_seed % len(self.choices)]
        sites = await self._ensure_site(resources)
        view = await site_call(sites.create_session(self.task.site, goal=self.task.goal,
                                                     start_state=self.task.start_state, seed=layout_seed))
        self._session, self._cursor, self.step_events = view.id, 0, []
        self._jump_view = None
        # The page keeps nothing of its own (the state lives in the session), so the
        # previous episode's page can show the new session in place: the sandbox clears
        # cookies and storage and site.js swaps in the new session's page.
        # A page that a crashed episode left waiting for an event's answer is not kept: the
        # reset opens a fresh one, so one broken task never poisons the tasks after it.
        keep = self.reuse_page and await page_idle(browser)
        content = await site_call(sites.page_html(view.id)) if keep else None
        await browser.reset(view.url, allowed_origins=(sites.site_url,), keep_page=keep, content=content)
        # Set each time: a kept page keeps what it had, and the next task may want otherwise.
        await prepare_page(browser, sites, take_events=self.take_events, prefetch=self.prefetch)
        await self._settle(browser, sites, view.id)  # first paint done before the screenshot
        return TaskSetup(instruction=self.task.instruction, start_url=view.url,
                         allowed_origins=(sites.site_url,), fsm_state=view.state,
                         max_steps=step_budget(self.task), start_distance=view.distance,
                         goal=self.task.goal)

    async def validate(self, sandbox: Sandbox, action: Action | None) -> Validation:
        sites, sid = self._require()
        left = None
        try:
            await self._shown(sandbox, sites, sid)
        except PageLeft as exc:  # the agent's doing: judged as a step that fired no event
            left = str(exc)
        records = await site_call(sites.events(sid, since=self._cursor))
        self.step_events.append(len(records))
        if records:
            self._cursor = records[-1].seq
            verdict = combine_verdicts([r.verdict for r in records])
        else:
            verdict = await self._idle_verdict(sites, sid)
        success = verdict.goal_reached
        dead_end = verdict.distance_after is None
        message = ("goal reached" if success else "the goal can no longer be reached" if dead_end
                   else f"{verdict.distance_after} step(s) from the goal")
        raw = 1.0 if success else 0.0
        return Validation(reward=raw, raw_reward=raw, done=success or dead_end, success=success,
                          message=message, verdict=verdict, action_error=left)

    async def cheat(self, sandbox: Sandbox) -> Action | None:
        sites, sid = self._require()
        view = await site_call(sites.session(sid))
        if view.goal_reached:
            return Done()
        edge = await site_call(sites.oracle_edge(sid))
        if edge is None:
            return None
        return await self._edge_action(sandbox, edge, view.page)

    async def teardown(self, sandbox: Sandbox) -> None:
        if self._session is not None and self._sites is not None:
            try:
                await self._sites.delete_session(self._session)
            except (SessionError, SiteUnavailable):
                pass  # the server already dropped it, or is gone: nothing left to release
        self._session = None

    # ---- what a surface other than the browser page overrides (the desktop's apps) -------
    async def _shown(self, sandbox: Sandbox, sites: SiteClient, sid: str) -> None:
        """Wait until the surface shows the state of the session's last event."""
        await self._settle(require_browser(sandbox, self.id), sites, sid)

    async def _edge_action(self, sandbox: Sandbox, edge: Edge, page: str) -> Action:
        """The one action that moves the surface toward firing ``edge``."""
        probe = await require_browser(sandbox, self.id).evaluate(probe_expression(edge))
        return next_action(edge, probe, page)

    # ---- helpers ------------------------------------------------------------------------
    async def current_state(self) -> State:
        """The session's state now."""
        sites, sid = self._require()
        return State.from_key((await site_call(sites.session(sid))).state)

    async def _idle_verdict(self, sites: SiteClient, sid: str) -> StepVerdict:
        view = await site_call(sites.session(sid))
        return StepVerdict(state_before=view.state, state_after=view.state, transition_fired=False,
                           on_shortest_path=False, distance_before=view.distance,
                           distance_after=view.distance, goal_reached=view.goal_reached)

    def _require(self) -> tuple[SiteClient, str]:
        if self._sites is None or self._session is None:
            raise TaskError(f"expected setup() before using task {self.id}, got no session")
        return self._sites, self._session

    async def _ensure_site(self, resources: TaskResources) -> SiteClient:
        # Fetched every setup: each run's resources may hold another server.
        sites = self._given_sites or await resources.sites()
        self._sites = sites
        if not await site_call(sites.has_site(self.task.site)):
            if self._site_spec is not None and self._site_spec.name == self.task.site:
                await site_call(sites.add_site(self._site_spec))
            else:
                await site_call(sites.add_site(load_site(self.task.site)))
        return sites

    @property
    def site_spec(self) -> SiteSpec | None:
        """The spec of a site outside the library this task runs on (None: a library site)."""
        return self._site_spec

    @property
    def session_id(self) -> str | None:
        """The site-server session of the current episode (None before setup)."""
        return self._session

    async def jump(self, sandbox: Sandbox, state_key: str) -> str:
        """Move this episode's session straight to a reachable state (no replay) and show
        it in the page; returns the state key reached."""
        sites, sid = self._require()
        browser = require_browser(sandbox, self.id)
        view = await site_call(sites.jump(sid, state_key))
        self._jumps += 1
        marker = f"j{self._jumps}"
        # Until the next event, the page legitimately shows this marker instead of a seq.
        self._jump_view = (marker, view.seq)
        # Not awaited in the page: should the swap fall back to a full load, the evaluate
        # still returns before its document goes away. _settle waits for it.
        await browser.evaluate(f"(() => {{ const f = window.__fsm, url = './?v={marker}';"
                               " if (f) f.show(url); else setTimeout(() => location.replace(url), 0);"
                               " return true; })()")
        await self._settle(browser, sites, sid, marker=marker)
        return view.state

    async def _settle(self, browser: PageReader, sites: SiteClient, sid: str,
                      marker: str | None = None) -> None:
        """Wait until the page shows the state of the session's last event (or of the jump
        to ``marker``), so the screenshot is current (``harness.tasks.fsm_settle``)."""
        await settle(browser, sites, sid, task_id=self.id, jump_view=self._jump_view, marker=marker)


# ---- the `fsm` suite ---------------------------------------------------------------------

@dataclass(frozen=True)
class GoalTask:
    """A task built straight from a named goal: it starts where the goal says, else at the initial state."""

    id: str
    site: str
    start_state: str
    goal: str
    instruction: str
    difficulty: int


def goal_tasks(spec: SiteSpec, machine: Machine | None = None) -> list[GoalTask]:
    """One task per goal of ``spec`` that its start can reach (the start state the goal names,
    else the initial state), shortest first (``machine``: the spec's engine, if one is already built)."""
    machine = machine or Machine(spec)
    tasks = []
    for goal in spec.goals:
        first = machine.goal_start(goal.id) or machine.initial
        distance = machine.distance(first, goal.id)
        if distance is not None and distance > 0:
            tasks.append(GoalTask(goal.id, spec.name, first.key(), goal.id,
                                  goal.description[:1].upper() + goal.description[1:] + ".", distance))
    return sorted(tasks, key=lambda t: (t.difficulty, t.id))


@cache
def library_tasks(site: str) -> tuple[GoalTask, ...]:
    """The goal tasks of the library site ``site``, easiest first (loaded once per site)."""
    return tuple(goal_tasks(load_site(site), load_machine(site)))


def split_viewport(name: str) -> tuple[str, tuple[int, int] | None]:
    """``"shop/open_mug@phone"`` -> ``("shop/open_mug", (390, 844))``; no ``@``: None. A
    suffix that names no viewport is a ConfigError saying what is expected."""
    base, sep, viewport = name.rpartition(VIEWPORT_SEP)
    if not sep or "/" in viewport or TASK_FILE_SEP in viewport:  # an "@" inside a path
        return name, None
    return base, parse_viewport(viewport, option=f"task {name!r}: the viewport after {VIEWPORT_SEP!r}")


class FSMSuite:
    """``fsm:SITE`` draws one of the site's goal tasks per episode (by seed);
    ``fsm:SITE/GOAL`` is one task; ``fsm:TASKS.jsonl`` stands for every task in a file
    written by ``cua tasks synth`` (one task id ``fsm:TASKS.jsonl#TASK`` each). Any of
    them may end in ``@VIEWPORT`` (``@phone``, ``@390x844``): the same task in that viewport."""

    def accepts(self, name: str) -> bool:
        """Whether ``name`` is a task, loading only the site (or tasks file) it names."""
        name, _ = split_viewport(name)
        path, sep, task_id = name.partition(TASK_FILE_SEP)
        if path.endswith(".jsonl"):
            return not sep or task_id in _file_tasks(path)
        site, slash, goal = name.partition("/")
        if site not in list_sites():
            return False
        return not slash or any(t.id == goal for t in library_tasks(site))

    def candidates(self, name: str) -> list[str]:
        """What a mistyped ``name`` is matched against: the tasks of the file or site it
        names, else the sites (never every site's tasks: those take seconds to solve)."""
        name, _ = split_viewport(name)
        path, sep, _ = name.partition(TASK_FILE_SEP)
        if sep and path.endswith(".jsonl"):
            return [f"{path}{TASK_FILE_SEP}{task_id}" for task_id in _file_tasks(path)]
        site, slash, _ = name.partition("/")
        if slash and site in list_sites():
            return [f"{site}/{t.id}" for t in library_tasks(site)]
        return list_sites()

    def expand(self, name: str) -> list[str] | None:
        base, viewport = split_viewport(name)
        if not base.endswith(".jsonl"):
            return None
        suffix = name[len(base):] if viewport is not None else ""
        return [f"{base}{TASK_FILE_SEP}{task_id}{suffix}" for task_id in _file_tasks(base)]

    def names(self) -> list[str]:
        sites = list(list_sites())
        return sites + [f"{s}/{t.id}" for s in sites for t in library_tasks(s)]

    def make(self, name: str) -> FSMTask:
        base, viewport = split_viewport(name)
        if TASK_FILE_SEP in base:
            path, _, task_id = base.partition(TASK_FILE_SEP)
            task = _file_tasks(path)[task_id]
            return FSMTask(task, site_spec=_site_for_tasks_file(path, task.site), name=name,
                           viewport=viewport)
        site, _, goal = base.partition("/")
        tasks = library_tasks(site)
        if goal:
            return FSMTask([t for t in tasks if t.id == goal], name=name, viewport=viewport)
        return FSMTask(list(tasks), name=name, viewport=viewport)


def suite() -> FSMSuite:
    """The registry's entry point for the ``fsm`` prefix."""
    return FSMSuite()


TASK_FILE_SEP = "#"
VIEWPORT_SEP = "@"


def _file_tasks(path: str) -> dict[str, TaskSpec]:
    """The tasks of a `cua tasks synth` JSONL file by id; a clear error if it is missing."""
    if not Path(path).is_file():
        raise TaskError(f"expected a tasks file written by `cua tasks synth`, got {path!r}, "
                        "which does not exist")
    return _read_tasks(path, Path(path).stat().st_mtime_ns)


@cache
def _read_tasks(path: str, mtime_ns: int) -> dict[str, TaskSpec]:
    """Parsed once per file version: the registry asks for every task id of the file."""
    return {task.id: task for task in load_tasks(path)}


@cache
def _site_for_tasks_file(path: str, site: str) -> SiteSpec:
    """The spec of ``site``: the library's, else a spec file beside the tasks file."""
    if site in list_sites():
        return load_site(site)
    folder = Path(path).resolve().parent
    for candidate in sorted(folder.glob("*.y*ml")) + sorted(folder.glob("*.json")):
        try:
            spec = load_and_validate(candidate)
        except (SpecInvalid, yaml.YAMLError, ValueError, OSError):
            continue  # other files in the folder need not be specs
        if spec.name == site:
            return spec
    raise TaskError(f"expected site {site!r} in the library or as a spec file beside {path}, "
                    "found neither; keep the spec you synthesized tasks from next to the tasks file")
