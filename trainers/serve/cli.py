"""``cua serve MODEL_DIR --port P``: serve a policy as an OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from harness.cli_config import config_command
from trainers.models.policy import PolicyConfig, load_policy

if TYPE_CHECKING:
    from trainers.serve.app import PolicyServer


class ServeConfig(BaseModel):
    """What `cua serve` serves and how."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: Path = Field(description="the checkpoint directory to serve")
    host: str = Field(default="127.0.0.1", description="address to bind")
    port: int = Field(default=8000, ge=0, le=65535, description="port to bind; 0: any free one")
    name: str | None = Field(default=None, description="the served model's name; None: the directory's name")
    max_batch: int = Field(default=8, ge=1, description="most prompts per model call")
    max_wait_ms: float = Field(default=5.0, ge=0.0, description="how long a lone prompt waits for others")
    max_new_tokens: int = Field(default=1024, ge=1, description="largest max_tokens a request may ask")
    device: str = Field(default="auto", description="auto, cpu, cuda, cuda:N")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(default="auto", description="weight dtype")
    min_pixels: int | None = Field(default=None, ge=1, description="screenshot pixel floor; None: the checkpoint's")
    max_pixels: int | None = Field(default=None, ge=1, description="screenshot pixel budget; None: the checkpoint's")
    policy_version: int = Field(default=0, description="the version replies report until POST /v1/weights")
    api_key: str | None = Field(default=None, description="a key clients must send as 'Authorization: "
                                "Bearer KEY' on /v1 routes; None: the CUA_SERVE_API_KEY variable, else open")


def run_serve(config: ServeConfig) -> None:
    """Load the policy and serve it until SIGINT or SIGTERM."""
    from trainers.serve.app import PolicyServer

    policy = load_policy(PolicyConfig(path=config.model, device=config.device, dtype=config.dtype,
                                      min_pixels=config.min_pixels, max_pixels=config.max_pixels))
    server = PolicyServer(policy, name=config.name or Path(config.model).resolve().name,
                          max_batch=config.max_batch, max_wait_ms=config.max_wait_ms,
                          max_new_tokens=config.max_new_tokens, policy_version=config.policy_version,
                          api_key=config.api_key or os.environ.get("CUA_SERVE_API_KEY") or None)
    asyncio.run(_serve(server, config.host, config.port))


async def _serve(server: PolicyServer, host: str, port: int) -> None:
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    bound_host, bound_port = runner.addresses[0][:2]
    print(f"serving {server.name} at http://{bound_host}:{bound_port}/v1", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        print("stopped", file=sys.stderr, flush=True)


def register(app: typer.Typer) -> None:
    """Add `cua serve` to the CLI."""
    app.command("serve")(config_command(
        ServeConfig, run_serve, name="serve", positional=("model",),
        doc="Serve a policy as an OpenAI-compatible endpoint: GET /health, GET /v1/models, POST "
            "/v1/chat/completions (images as data URLs, logprobs, stop, stream), POST /v1/completions, "
            "POST /v1/weights (reload). See docs/serving.md."))
