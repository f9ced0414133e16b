"""The ``docker`` env provider: envs served by ``cua env-server`` in containers.

``--provider docker`` (or ``docker:cpus=2,memory=4g,containers=2``: ``DockerConfig``
fields) builds the repo's Dockerfile image unless it exists (``harness.containers.image``),
starts ``containers`` containers of it, each running ``cua env-server`` for up to
``sessions`` episodes at once, and talks to them with the env server's client
(``RemoteEnv``), so the runner sees envs like local ones.

Each container runs with CPU, memory (no swap) and pids limits and ``network_mode=none``:
its only interface is its own loopback, where its site servers and Chromium talk. The
harness reaches the env server through a Unix socket in a directory bind-mounted from the
host, the one door into the container; so the engine must run on this machine.

Health: a container whose episode failed on infrastructure is checked at once (running,
and its server answers ``/health``), and every container every ``health_interval_s``; one
that stopped, or that missed ``health_misses`` answers in a row, is removed and replaced. The episode that saw it die failed with an
``InfrastructureError`` (the connection dropped, or no answer in time), so the runner
retries it, on a healthy container: a dead container never becomes a zero reward.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.containers.image import DEFAULT_BASE_IMAGE, docker_client, ensure_image
from harness.env import Env
from harness.env_providers import EnvOptions, ProviderContext
from harness.errors import ConfigError
from harness.server.client import RemoteEnv, RemoteEnvs
from sandboxes.errors import InfrastructureError

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container

log = logging.getLogger(__name__)

SOCKET_IN_CONTAINER = "/run/cua"
LABEL = "cua.provider"
#: container states that will not answer again (podman says "stopped" where Docker says "exited")
STOPPED = frozenset({"exited", "stopped", "dead", "removing"})


class DockerConfig(BaseModel):
    """How the docker provider builds and runs its containers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    image: str | None = Field(default=None, description="image to run; None: the repo's "
                              "Dockerfile, built unless an image of the same inputs exists")
    base_image: str = Field(default_factory=lambda: os.environ.get("CUA_BASE_IMAGE",
                                                                   DEFAULT_BASE_IMAGE),
                            description="the Dockerfile's BASE_IMAGE (default $CUA_BASE_IMAGE, "
                            f"else {DEFAULT_BASE_IMAGE})")
    containers: int = Field(default=1, ge=1, description="containers (env servers) at once")
    sessions: int = Field(default=4, ge=1, description="episodes at once per container")
    cpus: float = Field(default=2.0, gt=0, description="CPU limit per container (cores)")
    memory: str = Field(default="4g", pattern=r"^\d+[bkmg]?$",
                        description="memory limit per container, swap included (e.g. 2g)")
    pids: int = Field(default=2048, ge=16, description="process/thread limit per container")
    shm: str = Field(default="512m", pattern=r"^\d+[bkmg]?$", description="/dev/shm size")
    start_timeout_s: float = Field(default=120.0, gt=0, description="limit for a container's "
                                   "env server to answer")
    health_interval_s: float = Field(default=5.0, gt=0, description="seconds between checks")
    health_timeout_s: float = Field(default=5.0, gt=0, description="limit for a /health answer")
    health_misses: int = Field(default=2, ge=1, description="missed /health answers in a row "
                               "that replace a running container (a stopped one goes at once)")


def parse_config(arg: str | None) -> DockerConfig:
    """``DockerConfig`` from ``docker:key=value,key=value`` (the text after ``docker:``)."""
    fields: dict[str, str] = {}
    for item in filter(None, (arg or "").split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"expected --provider docker:key=value,... (keys: "
                              f"{', '.join(DockerConfig.model_fields)}), got {item!r}")
        fields[key.strip().replace("-", "_")] = value.strip()
    try:
        return DockerConfig.model_validate(fields)
    except ValidationError as exc:
        raise ConfigError(f"--provider docker:{arg}: {exc}") from exc


class Slot:
    """One container, its env server's client and the episodes it serves now."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.container: Container | None = None
        self.remote: RemoteEnvs | None = None
        self.socket_dir: Path | None = None
        self.busy = 0
        self.misses = 0
        self.lock = asyncio.Lock()
        self.replacements = 0

    @property
    def name(self) -> str:
        return self.container.short_id if self.container is not None else f"slot {self.index}"


class DockerEnvs:
    """Envs in containers of the harness image (see the module docstring)."""

    def __init__(self, config: DockerConfig | None = None, *, client: DockerClient | None = None) -> None:
        self.config = config or DockerConfig()
        self._client = client
        self._token = secrets.token_urlsafe(24)
        self.slots = [Slot(i) for i in range(self.config.containers)]
        self._where: dict[int, tuple[Slot, RemoteEnvs]] = {}
        self._retired: list[RemoteEnvs] = []
        self._capacity: asyncio.Semaphore | None = None
        self._health: asyncio.Task[None] | None = None
        self.image: str | None = self.config.image
        self._started = False

    @property
    def client(self) -> DockerClient:
        if self._client is None:
            self._client = docker_client()
        return self._client

    # ---- EnvProvider --------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._capacity = asyncio.Semaphore(self.config.containers * self.config.sessions)
        try:
            if self.image is None:
                self.image = await asyncio.to_thread(ensure_image, self.client,
                                                     self.config.base_image)
            await asyncio.gather(*(self._launch(slot) for slot in self.slots))
        except BaseException:
            await self.close()
            raise
        self._health = asyncio.create_task(self._health_loop(), name="docker-health")

    async def open(self, task_id: str, options: EnvOptions) -> RemoteEnv:
        await self.start()
        assert self._capacity is not None
        await self._capacity.acquire()
        try:
            slot = min(self.slots, key=lambda s: s.busy)
            async with slot.lock:
                if slot.remote is None:  # its last launch failed: try again
                    await self._launch_locked(slot)
            remote = slot.remote
            assert remote is not None
            env = await remote.open(task_id, options)
        except BaseException:
            self._capacity.release()
            raise
        slot.busy += 1
        self._where[id(env)] = (slot, remote)
        return env

    async def release(self, env: Env) -> None:
        _, remote = self._done(env)
        await remote.release(env)

    async def discard(self, env: Env) -> None:
        """The episode failed on infrastructure: check its container now, replace it if dead."""
        slot, remote = self._done(env)
        await remote.discard(env)
        await self.check(slot)

    async def close(self) -> None:
        if self._health is not None:
            self._health.cancel()
            with contextlib.suppress(BaseException):
                await self._health
            self._health = None
        for slot in self.slots:
            await self._remove(slot)
        for remote in self._retired:
            await remote.close()
        self._retired.clear()

    # ---- health -------------------------------------------------------------------------

    async def healthy(self, slot: Slot) -> bool:
        """Whether the slot's container runs and its env server answers ``/health``."""
        return await self._problem(slot) is None

    async def _problem(self, slot: Slot) -> str | None:
        """Why the slot is not healthy (None: it is); "exited" when its container is gone."""
        if slot.container is None or slot.remote is None:
            return "exited: no container"
        try:
            await asyncio.to_thread(slot.container.reload)
        except Exception as exc:  # removed behind our back, or the engine is down
            return f"exited: {type(exc).__name__}: {exc}"
        if slot.container.status != "running":
            code = slot.container.attrs.get("State", {}).get("ExitCode")
            return f"exited: status {slot.container.status}, exit code {code}"
        try:
            await slot.remote.connection.call("GET", "/health",
                                              timeout_s=self.config.health_timeout_s)
        except Exception as exc:
            return f"no /health answer: {exc}"
        return None

    async def check(self, slot: Slot) -> None:
        """Replace the slot's container if it stopped, or if its server missed
        ``health_misses`` checks in a row (a busy server may miss one)."""
        async with slot.lock:
            problem = await self._problem(slot)
            if problem is None:
                slot.misses = 0
                return
            slot.misses += 1
            if not problem.startswith("exited") and slot.misses < self.config.health_misses:
                log.info("docker provider: container %s: %s", slot.name, problem)
                return
            log.warning("docker provider: replacing container %s (%s)", slot.name, problem)
            slot.replacements += 1
            await self._launch_locked(slot)

    async def _health_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.health_interval_s)
            for slot in self.slots:
                try:
                    await self.check(slot)
                except Exception as exc:  # the next check (or open) tries again
                    log.warning("docker provider: replacing %s failed: %s", slot.name, exc)

    # ---- containers ---------------------------------------------------------------------

    def _done(self, env: Env) -> tuple[Slot, RemoteEnvs]:
        slot, remote = self._where.pop(id(env))
        slot.busy -= 1
        assert self._capacity is not None
        self._capacity.release()
        return slot, remote

    async def _launch(self, slot: Slot) -> None:
        async with slot.lock:
            await self._launch_locked(slot)

    async def _launch_locked(self, slot: Slot) -> None:
        """(Re)start the slot's container and wait until its env server answers; a
        container that does not start is removed (its logs are in the error)."""
        await self._remove(slot)
        slot.socket_dir = Path(tempfile.mkdtemp(prefix="cua-docker-"))
        slot.socket_dir.chmod(0o777)
        try:
            slot.container = await asyncio.to_thread(self._run_container, slot.socket_dir)
            slot.remote = await self._wait_ready(slot.container, slot.socket_dir)
        except BaseException:
            await self._remove(slot)
            raise
        slot.misses = 0

    async def _wait_ready(self, container: Container, socket_dir: Path) -> RemoteEnvs:
        remote = RemoteEnvs(f"unix:{socket_dir / 'env.sock'}", self._token)
        deadline = time.monotonic() + self.config.start_timeout_s
        try:
            while True:
                await asyncio.to_thread(container.reload)
                if container.status in STOPPED:
                    logs = await asyncio.to_thread(container.logs, tail=20)
                    raise InfrastructureError(
                        f"expected the env server in container {container.short_id} to start, "
                        f"got status {container.status}, exit code "
                        f"{container.attrs['State'].get('ExitCode')}:\n"
                        f"{logs.decode(errors='replace')}")
                with contextlib.suppress(InfrastructureError):
                    await remote.connection.call("GET", "/health", timeout_s=2.0)
                    return remote
                if time.monotonic() > deadline:
                    raise InfrastructureError(
                        f"expected the env server in container {container.short_id} to answer "
                        f"within {self.config.start_timeout_s}s, got nothing")
                await asyncio.sleep(0.2)
        except BaseException:
            await remote.close()
            raise

    def _run_container(self, socket_dir: Path) -> Container:
        """Start a container (in a thread); one the engine made but could not start is
        removed, and the engine's refusal raised as ours."""
        import docker.errors

        cfg, launch = self.config, secrets.token_hex(8)
        try:
            return self.client.containers.run(
                self.image,
                # oracle and jump on: only this harness reaches the container's socket
                # (no network), and the oracle agent and tree rollouts call them
                ["env-server", "--unix", f"{SOCKET_IN_CONTAINER}/env.sock",
                 "--max-sessions", str(cfg.sessions), "--expose", "oracle,jump"],
                detach=True,
                environment={"CUA_ENV_TOKEN": self._token},
                volumes={str(socket_dir): {"bind": SOCKET_IN_CONTAINER, "mode": "rw"}},
                network_mode="none",
                nano_cpus=int(cfg.cpus * 1e9),
                mem_limit=cfg.memory,
                memswap_limit=cfg.memory,
                pids_limit=cfg.pids,
                shm_size=cfg.shm,
                labels={LABEL: "docker", "cua.owner-pid": str(os.getpid()), "cua.launch": launch},
            )
        except docker.errors.ImageNotFound as exc:
            raise ConfigError(f"expected image {self.image!r} on the engine, got none; build it "
                              "(python -m harness.containers.image) or leave image unset") from exc
        except docker.errors.APIError as exc:
            for made in self.client.containers.list(all=True, filters={"label": f"cua.launch={launch}"}):
                with contextlib.suppress(docker.errors.APIError):
                    made.remove(force=True)
            raise InfrastructureError(f"expected the engine to start a container of "
                                      f"{self.image}, got {exc}") from exc

    async def _remove(self, slot: Slot) -> None:
        """Remove the slot's container (killed if running); its client retires."""
        container, slot.container = slot.container, None
        if slot.remote is not None:  # episodes still on it fail as unreachable, not closed
            self._retired.append(slot.remote)
            slot.remote = None
        if container is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(container.remove, force=True)
        if slot.socket_dir is not None:
            shutil.rmtree(slot.socket_dir, ignore_errors=True)
            slot.socket_dir = None


def docker(arg: str | None, context: ProviderContext) -> DockerEnvs:
    """The registry's entry for ``docker`` (``docker:key=value,...``)."""
    return DockerEnvs(parse_config(arg))
