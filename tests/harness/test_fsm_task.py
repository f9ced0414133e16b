"""FSM tasks through the real env and a real browser: the oracle solves every goal."""

from __future__ import annotations

import asyncio

import pytest

from fsm_sites.library import list_sites, load_site
from fsm_sites.server import SiteServer
from fsm_sites.verdict import StepVerdict
from harness.actions import Click, Done
from harness.env import AsyncBrowserEnv
from harness.fsm_tasks_cli import verify_one
from harness.tasks.fsm import FSMTask, combine_verdicts, goal_tasks
from tests.fsm_sites.widgets_spec import tiny_shop, widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
async def site_server():
    async with SiteServer([tiny_shop(), widgets_spec()]) as server:
        yield server


async def _solve(env: AsyncBrowserEnv, seed: int, limit: int = 40):
    obs, info = await env.reset(seed=seed)
    steps = []
    for _ in range(limit):
        action = await env.oracle_action()
        assert action is not None and not isinstance(action, Done)
        obs, reward, terminated, truncated, step_info = await env.step(action)
        steps.append((action, reward, step_info))
        if terminated or truncated:
            break
    return steps


@pytest.mark.parametrize("spec_fn, seed", [(widgets_spec, 0), (tiny_shop, 1)])
async def test_oracle_solves_every_goal(browser_host, site_server, spec_fn, seed) -> None:
    sandbox = await browser_host.new_sandbox()
    try:
        for task in goal_tasks(spec_fn()):
            fsm_task = FSMTask(task, site_server)
            env = AsyncBrowserEnv(fsm_task, sandbox, max_steps=60)
            steps = await _solve(env, seed, limit=60)
            action, reward, info = steps[-1]
            assert info.success and reward == 1.0 and info.verdict.goal_reached, (task.id, info.message)
            fired = [s[2].verdict for s in steps if s[2].verdict.transition_fired]
            assert all(v.on_shortest_path for v in fired), task.id
            assert len(fired) == fired[0].distance_before
            assert [n for n in fsm_task.step_events if n > 1] == []  # one event per step at most
            await env.close()
    finally:
        await sandbox.close()


async def test_wasted_click_and_shaping(browser_host, site_server) -> None:
    task = next(t for t in goal_tasks(tiny_shop()) if t.goal == "lamp_in_cart")
    sandbox = await browser_host.new_sandbox()
    try:
        fsm_task = FSMTask(task, site_server, shaping=0.1)
        env = AsyncBrowserEnv(fsm_task, sandbox)
        await env.reset(seed=2)
        _, reward, terminated, _, info = await env.step(Click(x=3, y=700))  # empty space
        assert reward == 0.0 and not terminated and not info.verdict.transition_fired
        _, reward, _, _, info = await env.step(await env.oracle_action())
        assert info.verdict.on_shortest_path and reward == pytest.approx(0.1)
        await env.close()
        assert fsm_task._session is None
    finally:
        await sandbox.close()


async def test_combine_verdicts_folds_first_before_last_after() -> None:
    a = StepVerdict(state_before="a", state_after="b", transition_fired=True, transition_id="t1",
                    on_shortest_path=True, distance_before=3, distance_after=2, goal_reached=False)
    b = StepVerdict(state_before="b", state_after="c", transition_fired=True, transition_id="t2",
                    on_shortest_path=False, distance_before=2, distance_after=4, goal_reached=False)
    both = combine_verdicts([a, b])
    assert (both.state_before, both.state_after, both.transition_id) == ("a", "c", "t2")
    assert (both.distance_before, both.distance_after, both.on_shortest_path) == (3, 4, False)


@pytest.mark.parametrize("site", list_sites())
async def test_oracle_solves_every_curated_task_at_two_layout_seeds(browser_host, site) -> None:
    """Every goal task of every curated site, replayed by the oracle in a real browser at two
    layout seeds, reaches its goal with every event-sending step on a shortest path."""
    spec = load_site(site)
    jobs = [(task, seed) for seed in (0, 1) for task in goal_tasks(spec)]
    verdicts = []
    async with SiteServer([spec]) as server:
        async def worker() -> None:
            sandbox = await browser_host.new_sandbox()
            try:
                while jobs:
                    task, seed = jobs.pop()
                    verdicts.append((seed, await verify_one(task, server, sandbox, seed=seed)))
            finally:
                await sandbox.close()

        await asyncio.gather(worker(), worker(), worker())
    assert len(verdicts) == 2 * len(goal_tasks(spec)) >= 2
    failed = [(seed, v.task_id, v.reason) for seed, v in verdicts if not v.kept]
    assert failed == []
