"""Errors raised by the harness.

    HarnessError
    ├── ActionParseError        model text that no codec can turn into an action (agent error)
    ├── UnknownNameError        a suite, task or agent name that is not registered (also a
    │   │                       ConfigError and a KeyError); the message offers close names
    │   ├── UnknownTaskError
    │   └── UnknownAgentError
    ├── TaskError               a task could not be set up or validated (infrastructure)
    │   └── PageLeft            the agent's actions took the task's page away (navigated off
    │                           the site, to a blocked URL, closed the window): ``validate``
    │                           makes it the step's ``last_action_error``, never infrastructure
    ├── EpisodeTimeout          a step or an episode ran past its time limit (infrastructure)
    ├── EnvHostLost             the process hosting envs (a Ray actor) died; a shared crash,
    │                           also a SandboxCrashed: the runner retries its episodes
    └── StoreError              the trajectory store refused an operation
        └── RestoreMismatch     a replayed node does not look like the stored one

    InfrastructureError         (sandboxes.errors) the one root of every failure that is not
                                the agent's: SandboxError, TaskError, EpisodeTimeout, the
                                site client's and the env server's errors. The runner, the
                                explorer and task synthesis all catch exactly this.
    ConfigError                 (sandboxes.errors) a configuration value of the wrong shape
    └── MissingExtraError       (sandboxes.errors) an optional extra that is not installed

Agent mistakes never raise out of ``env.step``: they come back as
``Observation.last_action_error``. Infrastructure failures raise, and the episode
runner retries them.
"""

from __future__ import annotations

import difflib

from sandboxes.errors import ConfigError, InfrastructureError, MissingExtraError, SandboxCrashed


class HarnessError(Exception):
    """Base class of every harness error."""


class ActionParseError(HarnessError, ValueError):
    """Text that could not be decoded into an action; the message says what was expected."""


class TaskError(HarnessError, InfrastructureError):
    """A task failed to set up, validate or tear down for infrastructure reasons."""


class PageLeft(TaskError):
    """The surface the task reads is gone by the agent's doing: its page navigated off the
    site (a blocked, ``chrome:``, ``data:`` or ``file:`` URL), shows a page the agent broke,
    or its window was closed. A task's ``validate`` catches it and judges the step as
    defined, with the message as the step's ``last_action_error`` (the agent's mistake, so
    scored). Raised where no action came first (setup, jump) it stays a ``TaskError``."""


class UnknownNameError(HarnessError, ConfigError, KeyError):
    """A name that is not registered (a user's mistake, not infrastructure)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


class UnknownTaskError(UnknownNameError):
    """A suite or task name that is not registered."""


class UnknownAgentError(UnknownNameError):
    """An agent name that is not registered."""


def did_you_mean(name: str, candidates: object) -> str:
    """`` (did you mean 'a', 'b'?)`` for the candidates close to ``name``, else ``""``."""
    matches = difflib.get_close_matches(name, list(candidates), n=5, cutoff=0.5)  # type: ignore[call-overload]
    return f" (did you mean {', '.join(repr(m) for m in matches)}?)" if matches else ""


class EpisodeTimeout(HarnessError, InfrastructureError, TimeoutError):
    """A step or an episode ran past its limit."""


class EnvHostLost(HarnessError, SandboxCrashed):
    """The process that hosted an env (a Ray actor) died; every env on it is gone. It was
    replaced; the episode is retried like one hit by a shared browser crash."""

    def __init__(self, message: str) -> None:
        super().__init__(message, shared=True)


class StoreError(HarnessError):
    """The trajectory store refused an operation."""


class RestoreMismatch(StoreError):
    """Replaying a node's path produced a screenshot that differs from the stored one."""


__all__ = [
    "ActionParseError", "ConfigError", "EnvHostLost", "EpisodeTimeout", "HarnessError", "InfrastructureError",
    "MissingExtraError", "PageLeft", "RestoreMismatch", "StoreError", "TaskError", "UnknownAgentError", "UnknownNameError",
    "UnknownTaskError", "did_you_mean",
]
