"""The ``desktop`` suite: tasks on an X desktop (xterm, windowed Chromium, the Tk FSM app).

Each task asks for a desktop sandbox (``SandboxRequest(kind="desktop")``), starts its
app on a clean desktop (``setup`` resets the sandbox: apps ended, a fresh home, a new
display), and is judged by a program: files in the episode's home (xterm), the FSM
site's state machine (Chromium and Tk FSM tasks: the same verdicts and goals as the
browser's ``fsm`` tasks), the page's own reward (MiniWoB in Chromium). Every task has an
oracle (``cheat``) that solves it through the screen.

Task ids: ``desktop:xterm-write-file``, ``desktop:tk-settings-password``, ...; the FSM
apps also take any library goal as ``desktop:tk/SITE/GOAL`` or ``desktop:chromium/SITE/GOAL``.
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fsm_sites.library import list_sites
from harness.actions import Action, Click, Done, Key, TypeText
from harness.errors import ConfigError
from harness.tasks.base import Task, TaskSetup, Validation, require_desktop
from harness.tasks.desktop_fsm import ChromiumFSMTask, ChromiumMiniWoBTask, TkFSMTask
from harness.tasks.fsm import library_tasks
from sandboxes.base import Sandbox, SandboxRequest
from sandboxes.errors import SandboxStartError

if TYPE_CHECKING:
    from harness.resources import TaskResources
    from sandboxes.desktop.sandbox import DesktopSandbox
    from sandboxes.desktop.xscreen import Window

#: How long validate waits for the shell to finish a command the agent entered.
COMMAND_WAIT_S = 2.0

#: The shell's rc file (in the episode's state dir, not its home): the home's own ~/.bashrc as
#: an interactive bash reads it, then a prompt that ends by naming xterm's icon after the
#: prompt's number ("xterm prompt 3"; openbox draws no icon name). xterm handles the prompt's
#: bytes in order, so a new icon name means that prompt is on the screen: the shell is ready,
#: or the command entered has ended.
SHELL_RC = r"""[ -f ~/.bashrc ] && . ~/.bashrc
PROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND; }((++CUA_PROMPTS))"
PS1="${PS1}\[\e]1;xterm prompt \${CUA_PROMPTS}\a\]"
"""
PROMPT_ICON = "xterm prompt "


@dataclass(frozen=True)
class ShellGoal:
    """One xterm task: files to prepare, the instruction, the check, the oracle's commands."""

    prepare: Callable[[Path, random.Random], dict[str, str]]  # writes files; returns template fields
    instruction: str  # formatted with the fields
    check: Callable[[Path, dict[str, str]], bool]
    commands: Callable[[dict[str, str]], list[str]]


_PHRASES = ("Total: $42 (paid) & done!", "Hello, World! <3 #1", "a_b-c=d+e; 50% off?",
            'say "hi" ~ {x|y} @home', "Grüße aus Köln: 7 × 6 = 42")


def _write_file_prepare(home: Path, rng: random.Random) -> dict[str, str]:
    return {"name": rng.choice(("notes.txt", "todo.txt", "memo.txt")), "text": rng.choice(_PHRASES)}


def _rename_prepare(home: Path, rng: random.Random) -> dict[str, str]:
    body = f"quarterly figures {rng.randint(100, 999)}\n"
    (home / "report-draft.txt").write_text(body, encoding="utf-8")
    return {"old": "report-draft.txt", "new": rng.choice(("report-final.txt", "report-v2.txt")), "body": body}


def _archive_prepare(home: Path, rng: random.Random) -> dict[str, str]:
    for name in ("app.log", "db.log", "keep.txt"):
        (home / name).write_text(f"{name} {rng.randint(0, 9999)}\n", encoding="utf-8")
    return {"dir": rng.choice(("logs", "old-logs", "archive"))}


def _archive_check(home: Path, fields: dict[str, str]) -> bool:
    folder = home / fields["dir"]
    return (folder.is_dir() and {p.name for p in folder.iterdir()} == {"app.log", "db.log"}
            and (home / "keep.txt").is_file() and not (home / "app.log").exists())


SHELL_GOALS: dict[str, ShellGoal] = {
    "xterm-write-file": ShellGoal(
        _write_file_prepare, "In the terminal, create the file {name} in your home directory holding "
        "exactly one line: {text}",
        lambda home, f: _read(home / f["name"]) == f["text"] + "\n",
        lambda f: [f"printf '%s\\n' {shlex.quote(f['text'])} > {f['name']}"]),
    "xterm-rename-file": ShellGoal(
        _rename_prepare, "In the terminal, rename {old} in your home directory to {new}.",
        lambda home, f: _read(home / f["new"]) == f["body"] and not (home / f["old"]).exists(),
        lambda f: [f"mv {f['old']} {f['new']}"]),
    "xterm-archive-logs": ShellGoal(
        _archive_prepare, "In the terminal, make a directory {dir} in your home directory and move "
        "every .log file there; leave the other files where they are.",
        _archive_check, lambda f: [f"mkdir {f['dir']} && mv *.log {f['dir']}/"]),
}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class XtermTask(Task):
    """A shell task in xterm, judged by the files in the episode's home directory."""

    sandbox_request = SandboxRequest(kind="desktop")
    has_oracle = True

    def __init__(self, name: str) -> None:
        self.id = f"desktop:{name}"
        self.goal = SHELL_GOALS[name]
        self.fields: dict[str, str] = {}
        self._plan: list[Action] = []
        self._home: Path | None = None
        self._window_id = 0
        self._prompts = 0  # the number of the shell's last prompt seen on the screen

    async def setup(self, sandbox: Sandbox, *, seed: int | None, resources: TaskResources) -> TaskSetup:
        desktop = require_desktop(sandbox, self.id)
        await desktop.reset()
        self._home = desktop.home
        self.fields = self.goal.prepare(desktop.home, random.Random(seed))
        rcfile = desktop.state_dir / "bashrc"
        rcfile.write_text(SHELL_RC, encoding="utf-8")
        proc = desktop.launch(["xterm", "-geometry", "100x30+0+0", "-fa", "DejaVu Sans Mono", "-fs", "11",
                               "+bc", "-T", "xterm", "-e", "bash", "--rcfile", str(rcfile)])
        # Ready is the shell's first prompt drawn in the focused window: the window maps, the
        # prompt and openbox's focus come later, by more than settle's quiet window on a
        # loaded machine (two seeded resets screenshotted different screens).
        window = await desktop.wait_for_window(
            lambda w: w.pid == proc.pid and w.icon_name == f"{PROMPT_ICON}1" and w.focused,
            "xterm (its shell's first prompt drawn, the window focused)")
        self._window_id, self._prompts = window.id, 1
        await desktop.settle()
        center = Click(x=window.x + window.width // 2, y=window.y + window.height // 2)
        self._plan = [center, *(TypeText(text=c + "\n") for c in self.goal.commands(self.fields)), Done()]
        return TaskSetup(instruction=self.goal.instruction.format(**self.fields), start_url="desktop://xterm",
                         max_steps=10)

    async def validate(self, sandbox: Sandbox, action: Action | None) -> Validation:
        assert self._home is not None
        lines = action.text.count("\n") if isinstance(action, TypeText) else int(
            isinstance(action, Key) and action.keys[-1] == "enter")
        if lines:
            await self._wait_for_prompt(require_desktop(sandbox, self.id), self._prompts + lines)
        success = self.goal.check(self._home, self.fields)
        done = success or isinstance(action, Done)
        return Validation(reward=float(success), raw_reward=float(success), done=done, success=success,
                          message="the files are as asked" if success else "not yet")

    async def cheat(self, sandbox: Sandbox) -> Action | None:
        return self._plan.pop(0) if self._plan else Done()


    async def _wait_for_prompt(self, desktop: DesktopSandbox, number: int) -> None:
        """Wait until the shell's prompt ``number`` is drawn (the lines entered have run), then
        settle; a command still running after ``COMMAND_WAIT_S`` is judged as it stands."""

        def drawn(window: Window) -> bool:
            if window.id != self._window_id:
                return False
            shown = window.icon_name.removeprefix(PROMPT_ICON)
            self._prompts = max(self._prompts, int(shown) if shown.isdigit() else 0)  # the last one seen
            return self._prompts >= number

        try:
            await desktop.wait_for_window(drawn, f"xterm's prompt {number}", timeout_s=COMMAND_WAIT_S)
        except SandboxStartError:
            return  # still running: judged as it stands
        await desktop.settle()


# ---- the suite ---------------------------------------------------------------------------

#: The curated FSM goals per app (site/goal), as task names ``tk-SITE-GOAL``/``chromium-SITE-GOAL``.
TK_GOALS = ("settings/cfg_location", "settings/password", "shop/add_lamp", "mail/star_m1")
CHROMIUM_GOALS = ("settings/cfg_both", "shop/add_lamp")
MINIWOB_PAGES = ("click-button",)


def task_names() -> list[str]:
    return [*SHELL_GOALS,
            *(f"tk-{g.replace('/', '-')}" for g in TK_GOALS),
            *(f"chromium-{g.replace('/', '-')}" for g in CHROMIUM_GOALS),
            *(f"chromium-miniwob-{p}" for p in MINIWOB_PAGES)]


class DesktopSuite:
    """The ``desktop`` suite for the task registry."""

    def names(self) -> Sequence[str]:
        return task_names()

    def accepts(self, name: str) -> bool:
        if name in task_names():
            return True
        app, _, goal = name.partition("/")
        return app in ("tk", "chromium") and goal.count("/") == 1 and _known_goal(goal)

    def candidates(self, name: str) -> list[str]:
        return task_names()

    def make(self, name: str) -> Task:
        if name in SHELL_GOALS:
            return XtermTask(name)
        app, _, goal = name.partition("/")
        if goal:
            site, _, goal_id = goal.partition("/")
            return (TkFSMTask if app == "tk" else ChromiumFSMTask)(site, goal_id, name=name)
        if name.startswith("chromium-miniwob-"):
            return ChromiumMiniWoBTask(name.removeprefix("chromium-miniwob-"))
        for prefix, cls, goals in (("tk-", TkFSMTask, TK_GOALS), ("chromium-", ChromiumFSMTask, CHROMIUM_GOALS)):
            for site_goal in goals:
                if name == prefix + site_goal.replace("/", "-"):
                    site, goal_id = site_goal.split("/")
                    return cls(site, goal_id, name=name)
        raise ConfigError(f"expected a desktop task in {task_names()}, got {name!r}")


def _known_goal(site_goal: str) -> bool:
    site, _, goal = site_goal.partition("/")
    return site in list_sites() and any(t.id == goal for t in library_tasks(site))


def suite() -> DesktopSuite:
    """The registry's entry point for the ``desktop`` prefix."""
    return DesktopSuite()
