"""bench_layers' env-server and container layers (issue 10).

- ``env-server``: ``cua env-server`` in a process of its own (under this one, so its CPU
  counts), its envs through ``RemoteEnvs`` over HTTP/WebSocket on 127.0.0.1;
- ``container``: the docker provider, the same server in one container (podman here: run
  scripts/podman_setup.sh and source its env file first), over a Unix socket. Its processes
  are not under this one, so their CPU comes from the engine (``extra_cpu_s``).

``prepare(layers)`` builds (or finds) the harness image once, before the first round.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from harness.env_providers import EnvProvider
from harness.server.client import RemoteEnvs

#: the harness image, built (or found) by ``prepare``
IMAGE: dict[str, str] = {}


class ServedEnvs(RemoteEnvs):
    """``cua env-server`` in a process of its own, and its envs through the remote client."""

    def __init__(self, sessions: int) -> None:
        super().__init__("http://unstarted", secrets.token_urlsafe(16))
        self.sessions = sessions
        self.proc: subprocess.Popen[str] | None = None

    async def start(self) -> None:
        if self.proc is not None:  # the runner starts its provider on every run: idempotent
            return
        env = {**os.environ, "CUA_ENV_TOKEN": self._token}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli import main; main()", "env-server",
             "--port", "0", "--max-sessions", str(self.sessions), "--expose", "oracle"],  # the oracle agent
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout is not None
        line = await asyncio.to_thread(self.proc.stdout.readline)
        if " on " not in line:
            raise RuntimeError(f"expected cua env-server to start, got {line!r}")
        self.url = line.rsplit(" on ", 1)[1].strip()
        await super().start()

    async def close(self) -> None:
        await super().close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            await asyncio.to_thread(self.proc.wait)


def _container(concurrency: int) -> EnvProvider:
    from harness.containers.provider import DockerConfig, DockerEnvs

    class ContainerEnvs(DockerEnvs):
        def extra_cpu_s(self) -> float:
            """CPU seconds of this provider's containers so far, from the engine."""
            total = 0
            for slot in self.slots:
                if slot.container is not None:
                    stats: Any = slot.container.stats(stream=False)
                    total += stats["cpu_stats"]["cpu_usage"]["total_usage"]
            return total / 1e9

    return ContainerEnvs(DockerConfig(image=IMAGE["tag"], containers=1, sessions=concurrency))


#: layer name -> (what it is, a function making its env provider for a concurrency)
SERVING_LAYERS: dict[str, tuple[str, Callable[[int], EnvProvider]]] = {
    "env-server": ("RemoteEnvs over HTTP/WebSocket to cua env-server in another process "
                   "(LocalEnvs there)", ServedEnvs),
    "container": ("DockerEnvs: cua env-server in one podman container (network none, 2 CPUs, "
                  "4 GiB), over a Unix socket", _container),
}


def prepare(layers: list[str]) -> None:
    """Build (or find) the harness image once if the container layer is measured."""
    if "container" in layers:
        from harness.containers.image import docker_client, ensure_image
        from harness.containers.provider import DockerConfig

        IMAGE["tag"] = ensure_image(docker_client(), DockerConfig().base_image)
