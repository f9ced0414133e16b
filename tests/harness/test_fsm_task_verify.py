"""Task verification: clean tasks are kept, broken ones dropped with a reason, and a
reset the page failed is dropped as infrastructure, apart from broken tasks."""

from __future__ import annotations

import dataclasses

import pytest

from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from harness.errors import EpisodeTimeout, TaskError
from harness.fsm_tasks_cli import INFRA_DROP, verify_one
from harness.tasks.fsm import FSMTask, goal_tasks
from tests.fsm_sites.widgets_spec import widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_verification_keeps_clean_tasks_and_drops_broken_ones(provider) -> None:
    spec = widgets_spec()
    good = goal_tasks(spec)[0]
    no_goal = dataclasses.replace(good, id="broken_goal", goal="fly_to_the_moon")
    off_map = dataclasses.replace(good, id="off_map", start_state='attic{"x":1}')
    async with SiteServer([spec]) as server:
        sandbox = await provider.new_browser()
        try:
            kept = await verify_one(good, LocalSiteClient(server), sandbox, seed=3)
            broken = await verify_one(no_goal, LocalSiteClient(server), sandbox, seed=3)
            unreachable = await verify_one(off_map, LocalSiteClient(server), sandbox, seed=3)
        finally:
            await sandbox.close()
    assert kept.kept and kept.reason == "ok" and kept.steps >= good.difficulty
    assert not broken.kept and "setup failed" in broken.reason and "fly_to_the_moon" in broken.reason
    assert not unreachable.kept and "start_state reachable" in unreachable.reason


@pytest.mark.parametrize("error", [TaskError("page still loading"), EpisodeTimeout("reset took too long")])
async def test_a_reset_the_page_failed_is_dropped_as_infrastructure(provider, monkeypatch, error) -> None:
    async def stuck(self, *args, **kwargs):
        raise error

    monkeypatch.setattr(FSMTask, "_settle", stuck)
    spec = widgets_spec()
    async with SiteServer([spec]) as server:
        sandbox = await provider.new_browser()
        try:
            verdict = await verify_one(goal_tasks(spec)[0], LocalSiteClient(server), sandbox, seed=0)
        finally:
            await sandbox.close()
    assert not verdict.kept and verdict.reason.startswith(INFRA_DROP)
    assert type(error).__name__ in verdict.reason


class _CrashingSites(LocalSiteClient):
    """A site server that crashes while answering the page's event (as rendering a modal
    over a repeated row once did): the page is left waiting for that answer."""

    def page_event(self, session_id: str, body: str):
        raise RuntimeError("the server crashed rendering the answer")


async def test_a_task_that_crashes_leaves_the_next_task_a_clean_browser(provider) -> None:
    spec = widgets_spec()
    task = goal_tasks(spec)[0]
    async with SiteServer([spec]) as server:
        sandbox = await provider.new_browser()
        try:
            crashed = await verify_one(task, _CrashingSites(server), sandbox, seed=1)
            after = await verify_one(task, LocalSiteClient(server), sandbox, seed=1)
        finally:
            await sandbox.close()
    assert not crashed.kept and "crashed rendering" in crashed.reason
    assert after.kept and after.reason == "ok", after.reason
