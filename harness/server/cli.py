"""`cua env-server`: serve envs (task + sandbox) over HTTP and WebSocket, in OpenEnv's protocol.

    cua env-server --suite miniwob:click-test,click-button --port 8000 --token T
    cua env-server --suite fsm:shop --unix /run/cua/env.sock     # token from CUA_ENV_TOKEN
    cua env-server --suite fsm:shop --expose oracle,jump         # trainer-only tools on

It prints one line, ``cua env-server: serving <what> on <url>``, once it answers, and runs
until SIGTERM or SIGINT. ``--port 0`` picks a free port (the line says which).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
from pathlib import Path

import typer
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.cli_config import config_command
from harness.env import resolve_codec
from harness.env_providers import EnvOptions, LocalEnvs
from harness.errors import ConfigError
from harness.rewards import RewardMode
from harness.server.app import EnvServer
from harness.server.sessions import SessionPool, parse_expose
from harness.tasks.registry import suite_task_ids

TOKEN_ENV = "CUA_ENV_TOKEN"


class EnvServerConfig(BaseModel):
    """Everything `cua env-server` needs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str | None = Field(default=None, description="the tasks served, as for cua eval "
                              "('miniwob:click-test', 'fsm:shop+miniwob'); None: any registered task")
    host: str = Field(default="127.0.0.1", description="address to listen on")
    port: int = Field(default=8000, ge=0, le=65535, description="port to listen on; 0 picks a free one")
    unix: Path | None = Field(default=None, description="listen on this Unix socket instead of "
                              "host:port (how a container without a network is reached)")
    token: str | None = Field(default=None, description=f"the token every call must carry; "
                              f"None: ${TOKEN_ENV}")
    max_sessions: int = Field(default=8, ge=1, description="concurrent sessions (episodes) at most")
    session_timeout_s: float = Field(default=600.0, gt=0, description="close a session idle this long")
    codec: str = Field(default="json", description="codec of text actions that name none")
    max_steps: int | None = Field(default=None, ge=1, description="steps before truncation; "
                                  "None: the task's budget (a reset's options may override)")
    reward: RewardMode = Field(default="outcome", description="outcome, step or progress")
    elements: bool = Field(default=False, description="observe the page's interactive elements")
    step_timeout_s: float = Field(default=30.0, gt=0, description="limit for one step")
    reset_timeout_s: float = Field(default=60.0, gt=0, description="limit for one reset")
    bind_host: str = Field(default="127.0.0.1", description="address the task servers (FSM "
                           "sites, MiniWoB pages) bind; the browser runs beside them")
    expose: str = Field(default="", description="trainer-only calls to serve, comma-separated: "
                        "oracle (the task's next oracle action), jump (move an FSM episode to a "
                        "state); off by default, since a client that may call them can score an "
                        "episode without playing it")

    @field_validator("expose")
    @classmethod
    def _exposable(cls, expose: str) -> str:
        return ",".join(sorted(parse_expose(expose)))

    @field_validator("suite")
    @classmethod
    def _known(cls, suite: str | None) -> str | None:
        if suite is not None:
            suite_task_ids(suite)
        return suite

    def options(self) -> EnvOptions:
        return EnvOptions(codec=self.codec, max_steps=self.max_steps, reward=self.reward,
                          elements=self.elements, step_timeout_s=self.step_timeout_s,
                          reset_timeout_s=self.reset_timeout_s)


def server_token(config: EnvServerConfig) -> str:
    token = config.token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise ConfigError(f"--token: expected a token (or ${TOKEN_ENV}), got none; the env "
                          "server answers no call without one")
    return token


async def serve(config: EnvServerConfig, *, ready: asyncio.Event | None = None) -> None:
    """Run the server until SIGTERM/SIGINT (or until the task running it is cancelled)."""
    resolve_codec(config.codec)
    tasks = suite_task_ids(config.suite) if config.suite is not None else None
    pool = SessionPool(LocalEnvs(bind_host=config.bind_host), tasks=tasks,
                       defaults=config.options(), max_sessions=config.max_sessions,
                       idle_timeout_s=config.session_timeout_s, expose=parse_expose(config.expose))
    runner = web.AppRunner(EnvServer(pool, server_token(config)).app(), access_log=None,
                           handle_signals=False)
    await runner.setup()
    try:
        if config.unix is not None:
            config.unix.parent.mkdir(parents=True, exist_ok=True)
            config.unix.unlink(missing_ok=True)
            await web.UnixSite(runner, str(config.unix)).start()
            config.unix.chmod(0o666)  # the harness may run as another user than the server
            url = f"unix:{config.unix}"
        else:
            site = web.TCPSite(runner, config.host, config.port)
            await site.start()
            host, port = runner.addresses[0][:2]
            url = f"http://{host}:{port}"
        what = f"{len(tasks)} task(s)" if tasks is not None else "any task"
        print(f"cua env-server: serving {what} on {url}", flush=True)
        if ready is not None:
            ready.set()
        await _until_signalled()
    finally:
        await runner.cleanup()


async def _until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def hide_secrets(config: EnvServerConfig) -> EnvServerConfig:
    """The config with its token, which then leaves this process's environment (so no child,
    such as Playwright's driver or Chromium, inherits it); and this process made
    non-dumpable, so that a process without CAP_SYS_PTRACE (a shell in the same container,
    under Docker's or podman's default capabilities) cannot read its memory or its initial
    environment in /proc: the env server's token and the site server's admin token live
    there. See docs/security.md."""
    config = config.model_copy(update={"token": server_token(config)})
    os.environ.pop(TOKEN_ENV, None)
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    return config


_PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def run_env_server(config: EnvServerConfig) -> None:
    config = hide_secrets(config)  # also refuses a missing token before starting anything
    try:
        asyncio.run(serve(config))
    except KeyboardInterrupt:
        sys.exit(130)


def register(app: typer.Typer) -> None:
    """Add `cua env-server` to the CLI."""
    app.command("env-server")(config_command(
        EnvServerConfig, run_env_server, name="env-server",
        doc="Serve envs (task + sandbox) over HTTP and WebSocket in OpenEnv's protocol."))
