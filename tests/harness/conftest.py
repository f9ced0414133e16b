"""Fixtures shared by the harness tests."""

from __future__ import annotations

import pytest_asyncio

from harness.env_providers import LocalEnvs
from harness.resources import TaskResources
from sandboxes.desktop_config import DesktopConfig
from sandboxes.providers import LocalProvider


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def desktop_envs():
    """A module's pool of desktop envs (one X display reused between episodes)."""
    provider = LocalProvider(desktop=DesktopConfig(reset_mode="same_display"))
    async with TaskResources() as resources:
        pool = LocalEnvs(provider, resources=resources)
        yield pool
        await pool.close()
    await provider.close()
