"""Errors raised by sandboxes. All are infrastructure failures: the episode runner
retries them and never turns them into a reward.

    SandboxError
    ├── SandboxStartError      the browser or display could not be started
    ├── SandboxCrashed         the sandbox process died mid-episode (it has been restarted)
    ├── SandboxTimeout         an operation on the sandbox ran past its limit
    ├── SandboxClosed          the sandbox was used after close()
    ├── SandboxNavigationError reset could not load its start URL (site down, refused)
    └── SandboxEvaluationError a JavaScript expression threw inside the page
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class of sandbox (infrastructure) errors."""


class SandboxStartError(SandboxError):
    """The sandbox could not be started; the message says what is missing."""


class SandboxCrashed(SandboxError):
    """The sandbox process died during an episode. It has been restarted; retry the episode."""


class SandboxTimeout(SandboxError, TimeoutError):
    """A sandbox operation did not finish in time."""


class SandboxClosed(SandboxError):
    """The sandbox was used after it was closed."""


class SandboxNavigationError(SandboxError):
    """``reset`` could not load its start URL (the site is down or refused the request)."""


class SandboxEvaluationError(SandboxError):
    """A JavaScript expression passed to ``evaluate`` threw inside the page."""
