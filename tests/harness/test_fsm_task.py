"""FSM tasks through the real env and a real browser: the oracle solves every goal."""

from __future__ import annotations

import asyncio
import re

import pytest

from fsm_sites.library import list_sites, load_site
from fsm_sites.render import choose_style
from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from fsm_sites.serving.verdict import StepVerdict
from harness.actions import Click, Done
from harness.env import AsyncEnv
from harness.fsm_tasks_cli import verify_one
from harness.tasks.fsm import FSMTask, combine_verdicts, goal_tasks
from sandboxes.viewports import VIEWPORTS
from tests.fsm_sites.widgets_spec import tiny_shop, widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")
#: A layout seed whose navigation is a top navbar (a phone shows it as a menu button).
TOP_NAV_SEED = next(s for s in range(50) if choose_style(s)[1].nav == "top")


@pytest.fixture(scope="module")
async def site_server():
    async with SiteServer([tiny_shop(), widgets_spec()]) as server:
        yield server


async def _solve(env: AsyncEnv, seed: int, limit: int = 40):
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
async def test_oracle_solves_every_goal(provider, site_server, spec_fn, seed) -> None:
    sandbox = await provider.new_browser()
    try:
        for task in goal_tasks(spec_fn()):
            fsm_task = FSMTask(task, LocalSiteClient(site_server))
            env = AsyncEnv(fsm_task, sandbox, max_steps=60)
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


@pytest.mark.parametrize("mode, on_path", [("outcome", 0.0), ("step", 0.5), ("progress", 0.5)])
async def test_wasted_click_and_reward_modes(provider, site_server, mode, on_path) -> None:
    task = next(t for t in goal_tasks(tiny_shop()) if t.goal == "lamp_in_cart")
    assert task.difficulty == 2
    sandbox = await provider.new_browser()
    try:
        fsm_task = FSMTask(task, LocalSiteClient(site_server))
        env = AsyncEnv(fsm_task, sandbox, reward=mode)
        _, info = await env.reset(seed=2)
        assert info.start_distance == 2
        assert env.max_steps == 6 * task.difficulty + 6  # no limit given: the task's budget
        _, reward, terminated, _, info = await env.step(Click(x=3, y=700))  # empty space
        assert reward == 0.0 and not terminated and not info.verdict.transition_fired
        _, reward, _, _, info = await env.step(await env.oracle_action())
        assert info.verdict.on_shortest_path and reward == pytest.approx(on_path)
        while not info.success:
            _, reward, _, _, info = await env.step(await env.oracle_action())
        # the goal step: outcome 1; step: 1 + 1/d0; progress: the last 1/d0 of the distance
        assert reward == pytest.approx({"outcome": 1.0, "step": 1.5, "progress": 0.5}[mode])
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


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("site", list_sites())
async def test_oracle_solves_every_curated_task_at_two_layout_seeds(provider, site, viewport) -> None:
    """Every goal task of every curated site, replayed by the oracle in a real browser at two
    layout seeds and two viewports (a phone's collapses the navigation into a menu the
    oracle opens first), reaches its goal with every event-sending step on a shortest path."""
    spec = load_site(site)
    width, height = VIEWPORTS[viewport]
    jobs = [(task, seed) for seed in (0, 1) for task in goal_tasks(spec)]
    verdicts = []
    async with SiteServer([spec]) as server:
        async def worker() -> None:
            sandbox = await provider.new_browser(viewport_width=width, viewport_height=height)
            try:
                while jobs:
                    task, seed = jobs.pop()
                    verdicts.append((seed, await verify_one(task, LocalSiteClient(server), sandbox, seed=seed)))
            finally:
                await sandbox.close()

        await asyncio.gather(worker(), worker(), worker())
    assert len(verdicts) == 2 * len(goal_tasks(spec)) >= 2
    failed = [(seed, v.task_id, v.reason) for seed, v in verdicts if not v.kept]
    assert failed == []


async def test_on_a_phone_the_oracle_opens_the_menu_before_a_nav_link(provider) -> None:
    """shop's checkout goes through the navbar's Cart link, which a phone hides behind the
    menu button: the oracle clicks that first (a step that sends no event and leaves the
    menu open), then the link, whose event is on the shortest path."""
    spec = load_site("shop")
    task = next(t for t in goal_tasks(spec) if t.goal == "checkout")
    sandbox = await provider.new_browser(viewport_width=390, viewport_height=844)
    try:
        async with SiteServer([spec]) as server:
            fsm_task = FSMTask(task, LocalSiteClient(server), viewport=(390, 844))
            assert fsm_task.sandbox_request.viewport == (390, 844)
            env = AsyncEnv(fsm_task, sandbox, max_steps=80)
            await env.reset(seed=TOP_NAV_SEED)
            nav = {t.id for t in spec.transitions for page in spec.pages for e in page.elements
                   if page.id == t.page and e.id == t.element and e.section == "nav"}
            steps, info = [], None  # (events sent, transition fired, menu open after it)
            while info is None or not info.success:
                _, _, _, truncated, info = await env.step(await env.oracle_action())
                assert not truncated
                menu_open = await sandbox.evaluate("document.getElementById('nav-toggle').checked")
                steps.append((fsm_task.step_events[-1], info.verdict.transition_id, menu_open))
            opened = [i for i, step in enumerate(steps) if step[2]]
            assert opened, steps
            for i in opened:
                assert steps[i][0] == 0  # opening the menu sent nothing
                assert steps[i + 1][0] == 1 and steps[i + 1][1] in nav  # then the link's event
            await env.close()
    finally:
        await sandbox.close()


def _pixels(png: bytes) -> bytes:
    import io

    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB").tobytes()


@pytest.mark.parametrize("width, prefetch, take", [(1024, False, True), (390, False, True), (1024, True, True),
                                                   (1024, False, False)])
async def test_a_reused_page_looks_exactly_like_a_fresh_context(provider, site_server, width, prefetch,
                                                                take) -> None:
    """The in-place paths (a step's swap of a whole page or of its body only, a prefetched
    page shown at once, a reset that keeps the page) show the same pixels as a fresh context
    loading the same (state, seed) from scratch, on a wide and on a phone-wide page, with
    the events taken by the task or posted."""
    task = next(t for t in goal_tasks(tiny_shop()) if t.difficulty >= 3)
    # A short viewport, so the pages scroll.
    kept = await provider.new_browser(viewport_width=width, viewport_height=360)
    fresh = await provider.new_browser(viewport_width=width, viewport_height=360)
    try:
        env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server), prefetch=prefetch, take_events=take), kept,
                       max_steps=60)
        first, _ = await env.reset(seed=4)
        page = kept.page
        states, shown_at_once = [], []
        while len(states) < 2:  # two steps that moved the machine (a scroll does not)
            obs, _, _, _, info = await env.step(await env.oracle_action())
            if info.verdict.transition_fired:
                states.append((info.verdict.state_after, obs.screenshot))
                shown_at_once.append(await kept.evaluate("window.__fsm.idle.then(() => window.__fsm.last)"))
        assert any(last["local"] for last in shown_at_once) == prefetch
        # After the first answer the page names its page, so the next one carries the body only.
        assert any(last.get("bodyOnly") for last in shown_at_once) == (not prefetch)
        await kept.evaluate("window.scrollTo(0, 200)")  # where the agent left it
        assert await kept.evaluate("window.scrollY") > 0  # (as far down as this theme's page goes)
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        again, _ = await env.reset(seed=4)  # a new session, shown in the same page
        assert kept.page is page and env.task.session_id is not None
        # The task handed the page its HTML: nothing was fetched but, with the prefetch on,
        # the pages the new session's events lead to.
        asked = f"{site_server.site_url}/s/{env.task.session_id}/next"
        assert requests == [] or (prefetch and requests == [asked])
        assert _pixels(again.screenshot) == _pixels(first.screenshot)
        other_theme, _ = await env.reset(seed=5)  # another layout seed: head and body change
        assert kept.page is page
        await env.close()

        fresh_env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server), reuse_page=False), fresh)
        fresh_first, _ = await fresh_env.reset(seed=5)
        assert _pixels(fresh_first.screenshot) == _pixels(other_theme.screenshot)
        for state, shot in states:
            await fresh_env.reset(seed=4)
            site_server.jump(fresh_env.task.session_id, state)  # behind the task's back
            await fresh.reset(fresh.url)  # a fresh context loads the state from scratch
            assert _pixels((await fresh.screenshot()).data) == _pixels(shot), state
        await fresh_env.close()
    finally:
        await kept.close()
        await fresh.close()


async def test_a_prefetched_step_ends_before_the_page_hears_back(provider, site_server) -> None:
    """A click whose page was prefetched shows it at once; the step ends once the server
    has taken the event (its verdict is recorded) and has that very page, while the page's
    answer is still held back, and the screenshot is what the page shows once it arrives.
    (Events posted over HTTP, so that the answer can be held.)"""
    task = next(t for t in goal_tasks(tiny_shop()) if t.difficulty >= 2)
    sandbox = await provider.new_browser()
    env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server), prefetch=True, take_events=False), sandbox)
    try:
        await env.reset(seed=2)
        page = sandbox.page
        await page.wait_for_function("window.__fsm.next !== null")
        answers: list[dict] = []
        release = asyncio.Event()

        async def hold(route) -> None:
            response = await route.fetch()  # the server takes the event now
            answers.append(await response.json())
            await release.wait()
            await route.fulfill(response=response)

        await page.route(re.compile(r"/event$"), hold)
        obs, _, _, _, info = await env.step(await env.oracle_action())
        assert info.verdict.transition_fired and env.task.step_events[-1] == 1
        assert answers and "html" not in answers[0]
        assert await sandbox.evaluate("window.__fsm.pending") is True  # no answer yet
        release.set()
        await page.wait_for_function("!window.__fsm.pending")
        assert _pixels((await sandbox.screenshot()).data) == _pixels(obs.screenshot)
        await env.close()
    finally:
        release.set()
        await sandbox.close()
