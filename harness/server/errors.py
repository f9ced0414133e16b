"""What a client of the env server raises, by who is at fault.

    InfrastructureError (sandboxes.errors)   retried by the runner, never a reward
    └── EnvServerError                  the server reported an infrastructure failure of the
        │                               session (its browser crashed, a step timed out);
        │                               the server dropped the session's env
        ├── RemoteSandboxCrashed        ... a browser crash (also a SandboxCrashed: `shared`
        │                               says whether other sessions' sandboxes went with it)
        ├── EnvServerBusy               the server has no free session
        └── EnvServerUnreachable        no answer: refused, connection lost, server gone
            └── EnvServerTimeout        no answer in time (a hung server or container)
    HarnessError (harness.errors)       not retried: retrying would fail the same way
    └── EnvServerRequestError           the server refused the request (a step before
        │                               reset, a closed session) or failed on a bug of its
        │                               own (EXECUTION_ERROR)
        ├── EnvServerInvalidRequest     a body, task or option it does not take, as a local
        │                               env would refuse it (also a ConfigError)
        ├── EnvServerAuthError          the token was missing or wrong (also a ConfigError)
        └── EnvServerNotExposed         oracle or jump on a server that keeps them off
                                        (start it with --expose; also a ConfigError)
"""

from __future__ import annotations

from harness.errors import ConfigError, HarnessError
from sandboxes.errors import InfrastructureError, SandboxCrashed


class EnvServerError(InfrastructureError):
    """The env server reported an infrastructure failure; retry the episode."""

    def __init__(self, message: str, *, code: str = "INFRASTRUCTURE_ERROR",
                 error_type: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.error_type = error_type


class RemoteSandboxCrashed(EnvServerError, SandboxCrashed):
    """The served env's browser crashed (and was restarted on the server)."""

    def __init__(self, message: str, *, shared: bool = False) -> None:
        EnvServerError.__init__(self, message, error_type="SandboxCrashed")
        self.shared = shared


class EnvServerBusy(EnvServerError):
    """The server is at its session limit."""


class EnvServerUnreachable(EnvServerError):
    """The server did not answer: connection refused or lost, or the server is gone."""


class EnvServerTimeout(EnvServerUnreachable, TimeoutError):
    """The server did not answer within the call's limit."""


class EnvServerRequestError(HarnessError):
    """The server refused the request or failed on its own bug; not retried."""

    def __init__(self, message: str, *, code: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class EnvServerInvalidRequest(EnvServerRequestError, ConfigError):
    """The server refused a body, task or option (VALIDATION_ERROR)."""


class EnvServerAuthError(EnvServerRequestError, ConfigError):
    """The server refused the token."""


class EnvServerNotExposed(EnvServerRequestError, ConfigError):
    """The server keeps the call off (oracle and jump need ``--expose``)."""


def error_from_wire(data: dict[str, object], *, status: int | None = None) -> Exception:
    """The exception an error body of the server stands for (see the tree above)."""
    code = str(data.get("code", "EXECUTION_ERROR"))
    message = str(data.get("message") or data.get("detail") or "the env server failed")
    error_type = data.get("error_type")
    if code == "INFRASTRUCTURE_ERROR":
        if error_type == "SandboxCrashed":
            return RemoteSandboxCrashed(message, shared=bool(data.get("shared", False)))
        return EnvServerError(f"{error_type}: {message}" if error_type else message,
                              error_type=None if error_type is None else str(error_type))
    if code == "CAPACITY_REACHED":
        return EnvServerBusy(message, code=code)
    if code == "VALIDATION_ERROR":
        return EnvServerInvalidRequest(message, code=code, status=status)
    if code == "UNAUTHORIZED":
        return EnvServerAuthError(message, code=code, status=status)
    if code == "NOT_EXPOSED":
        return EnvServerNotExposed(message, code=code, status=status)
    return EnvServerRequestError(message, code=code, status=status)
