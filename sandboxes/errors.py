"""Errors raised by sandboxes, and the two roots every package of ours shares.

    InfrastructureError            not the agent's fault: retried by the runner, recorded,
    │                              never turned into a reward (harness.errors.TaskError
    │                              and EpisodeTimeout derive from it too)
    └── SandboxError
        ├── SandboxStartError      the browser or display could not be started
        ├── SandboxCrashed         the sandbox process died mid-episode (it has been restarted)
        ├── SandboxTimeout         an operation on the sandbox ran past its limit
        ├── SandboxClosed          the sandbox was used after close()
        ├── SandboxNavigationError reset could not load its start URL (site down, refused)
        └── SandboxEvaluationError a JavaScript expression threw inside the page
    ConfigError (ValueError)       a configuration value that is missing or of the wrong shape
    └── MissingExtraError          a feature whose optional extra is not installed (also an
                                   ImportError); the message names the extra to install

These roots live here, in the lowest of our packages (``sandboxes`` imports nothing of
ours), so that the harness, the sandboxes and the providers raise one family each;
``harness.errors`` re-exports them.
"""

from __future__ import annotations


class InfrastructureError(Exception):
    """A failure of the machinery (sandbox, site server, timeout), not of the agent."""


class ConfigError(ValueError):
    """A configuration that does not validate; the message names every bad field."""


class MissingExtraError(ConfigError, ImportError):
    """A feature needs an optional extra that is not installed; the message names it
    (``sandboxes.extras.require_extra`` raises it)."""


class SandboxError(InfrastructureError):
    """Base class of sandbox (infrastructure) errors."""


class SandboxStartError(SandboxError):
    """The sandbox could not be started; the message says what is missing."""


class SandboxCrashed(SandboxError):
    """The sandbox process died during an episode. It has been restarted; retry the episode.

    ``shared`` is True when the crash took down a process other sandboxes share (the
    browser), so the episode that sees it need not be the one that caused it."""

    def __init__(self, message: str, *, shared: bool = False) -> None:
        super().__init__(message)
        self.shared = shared


class SandboxTimeout(SandboxError, TimeoutError):
    """A sandbox operation did not finish in time."""


class SandboxClosed(SandboxError):
    """The sandbox was used after it was closed."""


class SandboxNavigationError(SandboxError):
    """``reset`` could not load its start URL (the site is down or refused the request)."""


class SandboxEvaluationError(SandboxError):
    """A JavaScript expression passed to ``evaluate`` threw inside the page."""
