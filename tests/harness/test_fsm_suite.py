"""The `fsm` suite resolves a task id from its own site alone; one shared server per loop."""

from __future__ import annotations

import asyncio

import pytest

import fsm_sites.library as library
from fsm_sites.serving.server import SiteServer
from harness.errors import ConfigError, UnknownTaskError
from harness.resources import TaskResources
from harness.tasks import fsm
from harness.tasks.registry import make_task


@pytest.fixture
def loaded_sites(monkeypatch):
    """The library sites loaded or compiled while the test runs."""
    fsm.library_tasks.cache_clear()
    seen: list[str] = []
    for name in ("load_site", "load_machine"):
        real = getattr(library, name)
        for module in (library, fsm):  # the suite imports them by name
            monkeypatch.setattr(module, name, lambda site, real=real: seen.append(site) or real(site))
    yield seen
    fsm.library_tasks.cache_clear()


def test_a_site_goal_id_loads_only_that_site(loaded_sites) -> None:
    task = make_task("fsm:shop/checkout")
    assert task.id == "fsm:shop/checkout" and task.task.goal == "checkout"
    assert make_task("fsm:shop").id == "fsm:shop"
    assert set(loaded_sites) == {"shop"}


def test_a_mistyped_goal_suggests_the_goals_of_its_site(loaded_sites) -> None:
    with pytest.raises(UnknownTaskError, match="did you mean 'shop/checkout'"):
        make_task("fsm:shop/chekout")
    with pytest.raises(UnknownTaskError, match="did you mean 'shop'"):
        make_task("fsm:shpo")
    assert set(loaded_sites) == {"shop"}


def test_concurrent_first_callers_share_one_server_until_the_owner_closes_it(monkeypatch) -> None:
    starts: list[SiteServer] = []
    real_start = SiteServer.start

    async def counted_start(self: SiteServer) -> None:
        starts.append(self)
        await real_start(self)

    monkeypatch.setattr(SiteServer, "start", counted_start)

    async def scenario() -> None:
        resources = TaskResources()
        first, second = await asyncio.gather(resources.sites(), resources.sites())
        assert first is second and len(starts) == 1
        await resources.close()
        with pytest.raises(RuntimeError):  # closed: it serves nothing any more
            first.site_url  # noqa: B018
        with pytest.raises(ConfigError, match="closed"):
            await resources.sites()
        async with TaskResources() as other:
            assert await other.sites() is not first and len(starts) == 2

    asyncio.run(scenario())
