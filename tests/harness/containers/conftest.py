"""A real container engine for the container tests: podman behind its Docker-compatible
API, set up by scripts/podman_setup.sh (idempotent and cached; `make test` runs it first).

- ``engine``: the environment the Docker SDK needs (``DOCKER_HOST``, ``CUA_BASE_IMAGE``),
  also set in ``os.environ`` for the session.
- ``docker_envs``: one started ``DockerEnvs`` for the module (one small container, fast
  health checks); tests that kill its container leave it replaced.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from harness.containers.provider import DockerConfig, DockerEnvs

ROOT = Path(__file__).resolve().parents[3]
STATE = Path(os.environ.get("CUA_PODMAN_DIR", "/var/tmp/cua-podman"))


@pytest.fixture(scope="session")
def engine() -> dict[str, str]:
    if shutil.which("dpkg") is None:
        pytest.skip("expected a Debian machine (podman from apt) for the container tests")
    setup = subprocess.run([str(ROOT / "scripts" / "podman_setup.sh")], capture_output=True,
                           text=True, timeout=900)
    assert setup.returncode == 0, f"scripts/podman_setup.sh failed:\n{setup.stdout}{setup.stderr}"
    env: dict[str, str] = {}
    for line in (STATE / "env").read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = shlex.split(value)[0]
    os.environ.update(env)
    return env


@pytest_asyncio.fixture(scope="module")
async def docker_envs(engine) -> AsyncIterator[DockerEnvs]:
    config = DockerConfig(containers=1, sessions=2, cpus=1.5, memory="1536m", pids=1024,
                          health_interval_s=0.5, health_timeout_s=3.0,
                          base_image=engine["CUA_BASE_IMAGE"])
    envs = DockerEnvs(config)
    await envs.start()
    yield envs
    await envs.close()
