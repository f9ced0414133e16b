"""Errors raised by the harness.

    HarnessError
    ├── ActionParseError        model text that no codec can turn into an action (agent error)
    ├── ConfigError             a configuration value that is missing or of the wrong shape
    ├── TaskError               a task could not be set up or validated (infrastructure)
    │   └── UnknownTaskError    a suite or task name that does not exist
    ├── EpisodeTimeout          a step or an episode ran past its time limit (infrastructure)
    └── StoreError              the trajectory store refused an operation
        └── RestoreMismatch     a replayed node does not look like the stored one

Agent mistakes never raise out of ``env.step``: they come back as
``Observation.last_action_error``. Infrastructure failures raise, and the episode
runner retries them (see ``sandboxes.errors.SandboxError`` for the sandbox side).
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base class of every harness error."""


class ActionParseError(HarnessError, ValueError):
    """Text that could not be decoded into an action; the message says what was expected."""


class ConfigError(HarnessError, ValueError):
    """A configuration that does not validate; the message names every bad field."""


class TaskError(HarnessError):
    """A task failed to set up, validate or tear down for infrastructure reasons."""


class UnknownTaskError(TaskError, KeyError):
    """A suite or task name that is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


class EpisodeTimeout(HarnessError, TimeoutError):
    """A step or an episode ran past its limit."""


class StoreError(HarnessError):
    """The trajectory store refused an operation."""


class RestoreMismatch(StoreError):
    """Replaying a node's path produced a screenshot that differs from the stored one."""
