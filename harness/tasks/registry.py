"""The task registry: suite prefixes mapped lazily onto the modules that define them.

A task id is ``"<suite>:<name>"`` (``"miniwob:click-button"``). A suite is any object
with ``names() -> Sequence[str]`` and ``make(name) -> Task``; ``SUITES`` maps a prefix
onto ``"module:function"`` returning one. A suite whose ``names()`` is costly (or not
exhaustive) may add ``accepts(name) -> bool``, which then decides alone, and
``candidates(name)``: the names a typo of ``name`` is matched against in the error.
Modules are imported only when their suite is first asked for, so the registry costs
nothing at import and adding a suite is one line (or one ``register_suite`` call from
outside).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from functools import cache
from typing import Protocol, runtime_checkable

from harness.errors import UnknownTaskError, did_you_mean
from harness.tasks.base import DeclaresOracle, Task
from sandboxes.extras import require_extra


@runtime_checkable
class TaskSuite(Protocol):
    """A family of tasks sharing a prefix."""

    def names(self) -> Sequence[str]:
        """Every task name in the suite, without the prefix."""

    def make(self, name: str) -> Task:
        """A fresh task object for ``name`` (one per episode is fine: they are cheap)."""


@runtime_checkable
class ExpandingSuite(TaskSuite, Protocol):
    """A suite where one name may stand for several tasks (e.g. a tasks file)."""

    def expand(self, name: str) -> Sequence[str] | None:
        """The task names ``name`` stands for, or None where it names one task."""


@runtime_checkable
class CheckingSuite(TaskSuite, Protocol):
    """A suite whose names are too many or too costly to list (every goal of every site):
    it checks a name itself and says what a mistyped one is matched against."""

    def accepts(self, name: str) -> bool:
        """Whether ``name`` is one of the suite's tasks."""

    def candidates(self, name: str) -> Sequence[str]:
        """The names a mistyped ``name`` is matched against for a "did you mean"."""


#: prefix -> "module:function"; the function takes no argument and returns a TaskSuite.
SUITES: dict[str, str] = {
    "miniwob": "harness.tasks.miniwob:suite",
    "fsm": "harness.tasks.fsm:suite",
    "desktop": "harness.tasks.desktop:suite",
}

#: prefix -> (extra, what it is for): checked when the suite is first asked for, so that a
#: command naming the suite fails up front with the extra to install.
SUITE_EXTRAS: dict[str, tuple[str, str]] = {
    "miniwob": ("miniwob", "the miniwob suite"),
    "desktop": ("desktop", "the desktop suite (an X display per sandbox)"),
}


def register_suite(prefix: str, target: str) -> None:
    """Register (or replace) a suite: ``target`` is ``"module:function"``."""
    if ":" in prefix or not prefix:
        raise ValueError(f"expected a suite prefix without ':', got {prefix!r}")
    if target.count(":") != 1:
        raise ValueError(f"expected target as 'module:function', got {target!r}")
    SUITES[prefix] = target
    load_suite.cache_clear()


def list_suites() -> list[str]:
    """Registered suite prefixes (whether or not their module is importable yet)."""
    return sorted(SUITES)


@cache
def load_suite(prefix: str) -> TaskSuite:
    """Import and build the suite registered under ``prefix``."""
    if prefix not in SUITES:
        raise UnknownTaskError(
            f"expected a suite in {list_suites()}, got {prefix!r}{did_you_mean(prefix, SUITES)}"
        )
    if prefix in SUITE_EXTRAS:
        require_extra(*SUITE_EXTRAS[prefix])
    module_name, func_name = SUITES[prefix].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UnknownTaskError(
            f"expected suite {prefix!r} to be importable from {module_name}, got {exc}; "
            "install the package that provides it"
        ) from exc
    return getattr(module, func_name)()


def split_task_id(task_id: str) -> tuple[str, str]:
    """``"miniwob:click-button"`` -> ``("miniwob", "click-button")``."""
    prefix, sep, name = task_id.partition(":")
    if not sep or not name:
        raise UnknownTaskError(
            f"expected a task id like 'miniwob:click-button', got {task_id!r}"
        )
    return prefix, name


def check_task_id(task_id: str) -> None:
    """Raise ``UnknownTaskError`` unless ``task_id`` names a task (nothing is built)."""
    prefix, name = split_task_id(task_id)
    _check_names([name], load_suite(prefix), prefix)


def make_task(task_id: str) -> Task:
    """A fresh task object for one task id."""
    check_task_id(task_id)
    prefix, name = split_task_id(task_id)
    return load_suite(prefix).make(name)


def suite_task_ids(spec: str) -> list[str]:
    """Expand ``"miniwob"`` (all tasks) or ``"miniwob:a,b"`` (some) into task ids.

    Several specs may be joined with ``+``: ``"miniwob:click-test+fsm"``.
    """
    ids: list[str] = []
    for part in spec.split("+"):
        prefix, _, names_part = part.strip().partition(":")
        suite = load_suite(prefix)
        names = [n.strip() for n in names_part.split(",") if n.strip()] if names_part else []
        if names:
            names = [m for n in names for m in _expand(suite, n)]
            _check_names(names, suite, prefix)
        else:
            names = list(suite.names())
        ids.extend(f"{prefix}:{n}" for n in names)
    return list(dict.fromkeys(ids))


def suite_tasks(spec: str) -> list[Task]:
    """Task objects for every id ``suite_task_ids(spec)`` names."""
    return [make_task(task_id) for task_id in suite_task_ids(spec)]


def task_has_oracle(task: Task) -> bool:
    """True when the task defines an oracle (overrides ``cheat`` or says so)."""
    if isinstance(task, DeclaresOracle):
        return task.has_oracle
    return type(task).cheat is not Task.cheat


def _expand(suite: TaskSuite, name: str) -> list[str]:
    """A suite may let one name stand for several tasks (e.g. a tasks file) via ``expand``."""
    expanded = suite.expand(name) if isinstance(suite, ExpandingSuite) else None
    return list(expanded) if expanded else [name]


def _check_names(names: list[str], suite: TaskSuite, prefix: str) -> None:
    if isinstance(suite, CheckingSuite):
        unknown = [n for n in names if not suite.accepts(n)]
    else:
        known = set(suite.names())
        unknown = [n for n in names if n not in known]
    if unknown:
        near = suite.candidates(unknown[0]) if isinstance(suite, CheckingSuite) else suite.names()
        raise UnknownTaskError(
            f"expected a task of suite {prefix!r}, got {unknown[0]!r}{did_you_mean(unknown[0], near)}; "
            f"list the suite's tasks with `cua tasks list {prefix}`"
        )


