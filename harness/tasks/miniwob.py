"""The MiniWoB++ suite: every task page shipped in the ``miniwob`` pip package.

Pages are served over HTTP by the run's ``TaskResources`` (``miniwob_url``: one static
server per run, bound to its bind host). An episode is started the way the ``miniwob`` package's own Selenium env does
it: ``Math.seedrandom(seed)``, ``core.setDataMode(mode)``, ``core.startEpisodeReal()``;
the reward is read from the page's own globals (``WOB_REWARD_GLOBAL`` is time-discounted,
``WOB_RAW_REWARD_GLOBAL`` is not) and the instruction from ``core.getUtterance()``.

Reward integrity: the page's globals are only as honest as the script that can write them,
so MiniWoB runs only where the agent cannot run script of its own in the page. The headless
browser has no address bar, DevTools or bookmarks, and typed text never reaches a script;
the windowed Chromium of the ``desktop`` suite runs under a managed policy that refuses
``javascript:`` URLs and DevTools (``sandboxes.browser.policy``) and will not start
without it. An agent that reloads the page or navigates away (which would restart MiniWoB
on a new problem) ends its episode unrewarded, with that as its ``last_action_error``.

Viewport: 160x210 CSS pixels, exactly MiniWoB's task area (``#wrap``), which already holds
the instruction (the yellow ``#query`` box) at its top. The ``miniwob`` package opens a
500x320 window and crops the screenshot to that same 160x210 box; sizing the viewport to it
gives the same pixels with no crop, and puts the page's reward HUD (at x=165) off-screen.
"""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.actions import Action, Click
from harness.errors import TaskError
from harness.resources import miniwob_html
from harness.tasks.base import PageReader, Task, TaskSetup, Validation, require_browser
from sandboxes.base import ReadsAfterActions, Sandbox, SandboxRequest
from sandboxes.origins import origin_of

if TYPE_CHECKING:
    from harness.resources import TaskResources


def task_dir() -> pathlib.Path:
    """The folder of MiniWoB++ task pages, one ``NAME.html`` per task (the `miniwob`
    extra, imported at this point of use, so this module, whose constants the desktop suite
    shares, loads without it)."""
    return miniwob_html() / "miniwob"


#: MiniWoB's task area (constants.TASK_WIDTH/TASK_HEIGHT in the miniwob package).
VIEWPORT = (160, 210)


class MiniWoBConfig(BaseModel):
    """How MiniWoB episodes are started and rewarded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reward: Literal["discounted", "raw"] = Field(
        default="discounted",
        description="env reward: the page's time-discounted WOB_REWARD_GLOBAL or the raw one",
    )
    data_mode: Literal["train", "test"] = Field(
        default="train", description="MiniWoB's data split passed to core.setDataMode"
    )
    ready_timeout_s: float = Field(
        default=10.0, gt=0, description="how long to wait for the page to load and be ready"
    )


def task_names() -> list[str]:
    """Every MiniWoB task shipped in the miniwob package (130 in miniwob 1.0)."""
    return sorted(p.stem for p in task_dir().glob("*.html"))


# ---- the task ----------------------------------------------------------------------------

_READY_JS = (
    "typeof core !== 'undefined' && typeof genProblem === 'function'"
    " && document.getElementById('sync-task-cover') !== null"
)
#: Waits (up to 2 s, in the page) for the page to be ready, starts the seeded episode, waits
#: for WOB_TASK_READY and returns the instruction: one round trip when all goes well.
#: Says how far it got otherwise, so that a retry never starts the episode twice.
_START_JS = """(async () => {{
  const until = Date.now() + 2000, tick = () => new Promise(r => setTimeout(r, 10));
  const holds = check => {{ try {{ return Boolean(check()); }} catch (e) {{ return false; }} }};
  while (!holds(() => {ready})) {{
    if (Date.now() > until) return {{started: false}};
    await tick();
  }}
  {seed} core.setDataMode({mode}); core.startEpisodeReal();
  while (WOB_TASK_READY !== true) {{
    if (Date.now() > until) return {{started: true, ready: false}};
    await tick();
  }}
  return {{started: true, ready: true, utterance: {utterance}}};
}})()"""
#: a JS expression of the episode's state in the page's WOB_* globals (done, reward, reason)
STATE_JS = (
    "({done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL,"
    " reason: WOB_REWARD_REASON == null ? null : String(WOB_REWARD_REASON)})"
)
_UTTERANCE_JS = (
    "(() => { const u = core.getUtterance();"
    " return (u !== null && typeof u === 'object') ? u.utterance : u; })()"
)

#: JS expressions that find the element an oracle clicks, for the tasks that have one.
ORACLE_TARGETS: dict[str, str] = {
    "click-test": "document.getElementById('subbtn')",
    "click-test-2": "document.getElementById('subbtn')",
    "click-button": (
        "[...document.querySelectorAll('#area button')].find("
        "b => b.textContent === /\"(.*)\"/.exec(core.getUtterance())[1])"
    ),
    "click-link": (
        "[...document.querySelectorAll('#area .alink')].find("
        "a => a.textContent === /\"(.*)\"/.exec(core.getUtterance())[1])"
    ),
}


class MiniWoBTask(Task):
    """One MiniWoB++ page; ``setup`` starts a seeded episode in a fresh browser context."""

    #: a browser whose viewport is MiniWoB's task area (CSS pixels)
    sandbox_request = SandboxRequest(kind="browser", viewport=VIEWPORT)

    def __init__(self, name: str, config: MiniWoBConfig | None = None) -> None:
        pages = task_dir()
        if not (pages / f"{name}.html").is_file():
            raise TaskError(f"expected a MiniWoB page {name}.html in {pages}, got none")
        self.name = name
        self.id = f"miniwob:{name}"
        self.config = config or MiniWoBConfig()
        self._start_url: str | None = None

    @property
    def has_oracle(self) -> bool:
        return self.name in ORACLE_TARGETS

    async def setup(self, sandbox: Sandbox, *, seed: int | None,
                    resources: TaskResources) -> TaskSetup:
        browser = require_browser(sandbox, self.id)
        url = f"{await resources.miniwob_url()}miniwob/{self.name}.html"
        await browser.reset(url)  # the start URL's origin is allowed, and no other
        instruction = await self.start_episode(browser, seed=seed)
        self._start_url = browser.url.partition("#")[0]
        if isinstance(browser, ReadsAfterActions):  # validate's read rides on each action's last trip
            browser.read_after_actions(STATE_JS)
        origin = origin_of(url)
        return TaskSetup(instruction=instruction, start_url=url,
                         allowed_origins=(origin,) if origin else ())

    async def start_episode(self, sandbox: PageReader, *, seed: int | None) -> str:
        """Start a seeded episode on the already loaded page; return its instruction."""
        seed_js = "Math.seedrandom();" if seed is None else f"Math.seedrandom({json.dumps(seed)});"
        start = _START_JS.format(ready=_READY_JS, seed=seed_js, utterance=_UTTERANCE_JS,
                                 mode=json.dumps(self.config.data_mode))
        deadline = time.monotonic() + self.config.ready_timeout_s
        while not (state := await self._start(sandbox, start))["started"]:
            if time.monotonic() > deadline:
                raise TaskError(
                    f"expected the page to load (core.js and genProblem) within "
                    f"{self.config.ready_timeout_s}s on {self.id}, got a timeout; check the page "
                    "server and the browser"
                )
        if not state["ready"]:  # a task that prepares its problem asynchronously, slowly
            await self._wait_for(sandbox, "WOB_TASK_READY === true", "WOB_TASK_READY")
            state["utterance"] = await sandbox.evaluate(_UTTERANCE_JS)
        return str(state["utterance"] or "")

    async def _start(self, sandbox: PageReader, start: str) -> dict:
        state = await sandbox.evaluate(start)
        if not isinstance(state, dict):
            raise TaskError(f"expected the episode start of {self.id} to report its state, got "
                            f"{state!r}; is this a MiniWoB page?")
        return state

    async def validate(self, sandbox: Sandbox, action: Action | None) -> Validation:
        browser = require_browser(sandbox, self.id)
        if self._start_url is not None and browser.url.partition("#")[0] != self._start_url:
            return left_page(f"the page left the task for {browser.url}")
        return self.judge(await browser.evaluate(STATE_JS))

    def judge(self, state: object) -> Validation:
        """The step's judgement from the page's WOB_* globals (``STATE_JS``)."""
        if not isinstance(state, dict):
            raise TaskError(f"expected the WOB_* globals as an object, got {state!r}")
        done = bool(state["done"])
        raw = float(state["raw"]) if done else 0.0
        discounted = float(state["reward"]) if done else 0.0
        return Validation(
            reward=discounted if self.config.reward == "discounted" else raw,
            raw_reward=raw,
            done=done,
            success=done and raw > 0,
            message=state.get("reason") or "",
        )

    async def cheat(self, sandbox: Sandbox) -> Action | None:
        target = ORACLE_TARGETS.get(self.name)
        if target is None:
            return None
        center = await require_browser(sandbox, self.id).evaluate(
            f"(() => {{ const el = {target}; if (!el) return null;"
            " const r = el.getClientRects()[0];"
            " return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)]; })()"
        )
        if center is None:
            raise TaskError(f"expected the oracle target of {self.id} on the page, got none")
        if not (isinstance(center, list) and len(center) == 2):
            raise TaskError(f"expected [x, y] for the oracle target of {self.id}, got {center!r}")
        return Click(x=int(center[0]), y=int(center[1]))

    async def _wait_for(self, sandbox: PageReader, expression: str, what: str) -> None:
        # Poll inside the page (one round trip in the common case), in slices shorter
        # than the sandbox's own evaluate timeout, until our deadline.
        deadline = time.monotonic() + self.config.ready_timeout_s
        probe = (
            "new Promise(resolve => { const until = Date.now() + 2000; const check = () => {"
            f" let ok = false; try {{ ok = Boolean({expression}); }} catch (e) {{}}"
            " if (ok || Date.now() > until) resolve(ok); else setTimeout(check, 10); };"
            " check(); })"
        )
        while not await sandbox.evaluate(probe):
            if time.monotonic() > deadline:
                raise TaskError(
                    f"expected {what} within {self.config.ready_timeout_s}s on {self.id}, "
                    "got a timeout; check the page server and the browser"
                )


def left_page(why: str) -> Validation:
    """The end of an episode whose page the agent reloaded, left or closed: MiniWoB would
    start over on a new problem, so the episode ends unrewarded, as the agent's mistake."""
    message = f"{why}; a MiniWoB episode ends when its page is reloaded, left or closed"
    return Validation(reward=0.0, raw_reward=0.0, done=True, success=False, message=message,
                      action_error=message)


class MiniWoBSuite:
    """The ``miniwob`` suite for the task registry."""

    def __init__(self, config: MiniWoBConfig | None = None) -> None:
        self.config = config or MiniWoBConfig()
        self._names = task_names()

    def names(self) -> Sequence[str]:
        return self._names

    def make(self, name: str) -> MiniWoBTask:
        return MiniWoBTask(name, self.config)


def suite() -> MiniWoBSuite:
    """Entry point named in ``harness.tasks.registry.SUITES``."""
    return MiniWoBSuite()
