"""The widget kinds (menus, accordions, tooltips, comboboxes, steppers) in real Chromium:
the oracle solves goals that need each of them, every step sending at most one event of
the machine, and an agent's wrong interaction with a widget is a recorded step with its
verdict, not a crash."""

from __future__ import annotations

import pytest

from fsm_sites.library import load_site
from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from harness.actions import Click, Key, Move, Scroll
from harness.env import AsyncEnv
from harness.tasks.fsm import FSMTask, goal_tasks
from sandboxes.viewports import VIEWPORTS

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
async def site_server():
    async with SiteServer([load_site("account_center")]) as server:
        yield server


def _task(goal: str):
    return next(t for t in goal_tasks(load_site("account_center")) if t.goal == goal)


@pytest.mark.parametrize("viewport, seed, prefetch", [("desktop", 0, False), ("phone", 1, False),
                                                      ("desktop", 3, True), ("phone", 8, True)])
async def test_oracle_solves_every_widget_goal(provider, site_server, viewport, seed, prefetch) -> None:
    width, height = VIEWPORTS[viewport]
    sandbox = await provider.new_browser(viewport_width=width, viewport_height=height)
    try:
        for task in goal_tasks(load_site("account_center")):
            fsm_task = FSMTask(task, LocalSiteClient(site_server), prefetch=prefetch)
            env = AsyncEnv(fsm_task, sandbox, max_steps=30)
            await env.reset(seed=seed)
            actions, info = [], None
            for _ in range(30):
                action = await env.oracle_action()
                assert action is not None
                actions.append(action)
                _, _, terminated, truncated, info = await env.step(action)
                if terminated or truncated:
                    break
            assert info is not None and info.success and info.verdict.goal_reached, (task.id, info.message)
            assert [n for n in fsm_task.step_events if n > 1] == [], (task.id, actions)
            assert sum(fsm_task.step_events) == task.difficulty, (task.id, actions)
            if task.goal == "fee_shown":
                assert isinstance(actions[-1], Move)  # the hover is a pointer move, not a click
            await env.close()
    finally:
        await sandbox.close()


async def test_wrong_widget_interactions_are_steps_with_verdicts(provider, site_server) -> None:
    """Hovering the tooltip when the goal is elsewhere fires a transition off the shortest
    path; Escape with nothing open and a click on the page fire none; the episode goes on."""
    sandbox = await provider.new_browser()
    try:
        env = AsyncEnv(FSMTask(_task("sign_out"), LocalSiteClient(site_server)), sandbox, max_steps=20)
        await env.reset(seed=0)
        trigger = await sandbox.evaluate(
            "(() => { const r = document.querySelector('[data-el=fee] .tip-trigger').getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        _, _, terminated, _, info = await env.step(Move(x=int(trigger[0]), y=int(trigger[1])))
        assert info.verdict.transition_fired and info.verdict.transition_id == "show_fee"
        assert not info.verdict.on_shortest_path and not terminated
        assert await sandbox.evaluate("document.querySelector('[data-el=fee]').dataset.open") == "true"
        _, _, _, _, info = await env.step(Move(x=int(trigger[0]) + 1, y=int(trigger[1])))  # still on it
        assert not info.verdict.transition_fired
        _, _, _, _, info = await env.step(Key(keys=("escape",)))  # closes the tooltip
        assert info.verdict.transition_id == "hide_fee"
        _, _, _, _, info = await env.step(Key(keys=("escape",)))  # nothing open any more
        assert not info.verdict.transition_fired
        _, _, _, _, info = await env.step(Click(x=5, y=790))
        assert not info.verdict.transition_fired
        while not info.success:
            _, _, _, _, info = await env.step(await env.oracle_action())
        await env.close()
    finally:
        await sandbox.close()


async def test_the_element_list_shows_widgets_and_what_is_open(provider, site_server) -> None:
    sandbox = await provider.new_browser()
    try:
        env = AsyncEnv(FSMTask(_task("sign_out"), LocalSiteClient(site_server)), sandbox, max_steps=20)
        await env.reset(seed=0)
        before = {e.id: e for e in await sandbox.elements()}
        assert (before["account"].role, before["account"].label, before["account"].value) == ("button", "Account", None)
        assert before["fee"].role == "tooltip" and before["city"].role == "combobox" and "sign_out" not in before
        _, _, _, _, info = await env.step(await env.oracle_action())  # opens the menu
        assert info.verdict.transition_id == "account_toggle"
        after = {e.id: e for e in await sandbox.elements()}
        assert after["account"].value == "expanded" and after["sign_out"].role == "link"
        await env.close()
    finally:
        await sandbox.close()


async def test_a_long_curated_list_makes_the_oracle_scroll(provider) -> None:
    """jobs lists its twelve roles on one page, taller than the desktop viewport: saving the
    last one scrolls it into view first (a step that sends no event)."""
    spec = load_site("jobs")
    task = next(t for t in goal_tasks(spec) if t.goal == "save_two")
    sandbox = await provider.new_browser()
    try:
        async with SiteServer([spec]) as server:
            fsm_task = FSMTask(task, LocalSiteClient(server))
            env = AsyncEnv(fsm_task, sandbox, max_steps=30)
            await env.reset(seed=1)
            actions, info = [], None
            while info is None or not (info.success or len(actions) >= 30):
                action = await env.oracle_action()
                actions.append(action)
                _, _, _, _, info = await env.step(action)
            assert info.success and sum(fsm_task.step_events) == task.difficulty
            scrolls = [i for i, a in enumerate(actions) if isinstance(a, Scroll)]
            assert scrolls and all(fsm_task.step_events[i] == 0 for i in scrolls), actions
            await env.close()
    finally:
        await sandbox.close()
