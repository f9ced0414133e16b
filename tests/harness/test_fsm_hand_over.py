"""The hand-over: with an in-process site server, ``FSMTask`` (by default) takes the page's
events in its settle (site.js ``handOver``) instead of letting the page post them. Real Chromium, real
server: the same verdicts and pixels as posted events, refusals alike, HTTP when off."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from fsm_sites.engine.machine import Machine
from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from harness.actions import Click
from harness.env import AsyncEnv
from harness.tasks.fsm import FSMTask, goal_tasks
from tests.fsm_sites.widgets_spec import tiny_shop, widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
async def site_server():
    async with SiteServer([tiny_shop(), widgets_spec()]) as server:
        yield server


def _pixels(png: bytes) -> bytes:
    return Image.open(io.BytesIO(png)).convert("RGB").tobytes()


def _event_posts(requests: list[str]) -> list[str]:
    return [url for url in requests if url.endswith("/event")]


async def test_taken_events_get_the_verdicts_and_pixels_of_posted_ones(provider, site_server) -> None:
    """The oracle's actions on a page whose events the task takes, and the same actions on a
    page that posts them: step by step the same verdicts and the same pixels (widgets
    included: combobox, tooltip, slider), and only the second page sends requests."""
    taking, posting = await provider.new_browser(), await provider.new_browser()
    requests: dict[str, list[str]] = {"take": [], "post": []}
    try:
        for task in [t for t in goal_tasks(widgets_spec()) if t.difficulty >= 2][:3]:
            env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server)), taking, max_steps=40)
            twin = AsyncEnv(FSMTask(task, LocalSiteClient(site_server), take_events=False), posting, max_steps=40)
            await env.reset(seed=3)
            await twin.reset(seed=3)
            for sandbox, side in ((taking, "take"), (posting, "post")):
                sandbox.page.on("request", lambda request, side=side: requests[side].append(request.url))
            for _ in range(40):
                action = await env.oracle_action()
                assert action is not None
                obs, _, done, _, info = await env.step(action)
                twin_obs, _, twin_done, _, twin_info = await twin.step(action)
                assert info.verdict == twin_info.verdict, (task.id, action)
                assert _pixels(obs.screenshot) == _pixels(twin_obs.screenshot), (task.id, action)
                assert done == twin_done
                if done:
                    break
            assert info.success, task.id
            await env.close()
            await twin.close()
        assert _event_posts(requests["take"]) == []
        assert _event_posts(requests["post"]) != []
    finally:
        await taking.close()
        await posting.close()


async def test_a_stale_taken_event_is_refused_and_the_page_shows_the_current_state(provider, site_server) -> None:
    """The session moved behind the page's back: the event the task takes from the old page
    is refused as a posted one would be (StaleEvent, nothing logged) and the page then shows
    the session's state."""
    task = next(t for t in goal_tasks(widgets_spec()) if t.goal == "see_beta")
    sandbox = await provider.new_browser()
    try:
        env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server), take_events=True), sandbox, max_steps=10)
        await env.reset(seed=4)
        sid = env.task.session_id
        assert sid is not None
        details = next(s for s in Machine(widgets_spec()).graphs.graph().states if s.page == "details")
        site_server.jump(sid, details.key())
        box = await sandbox.page.locator('[data-el="tab_items"]').bounding_box()
        assert box is not None
        _, _, _, _, info = await env.step(Click(x=int(box["x"] + box["width"] / 2), y=int(box["y"] + box["height"] / 2)))
        assert env.task.step_events[-1] == 0 and not info.verdict.transition_fired
        assert site_server.events(sid) == []
        assert await sandbox.evaluate("document.body.getAttribute('data-page')") == "details"
        # The page reports where it is (the browser's URL stays as loaded: addressing is off).
        assert sandbox.url == await sandbox.evaluate("window.__fsm.address")
        assert sandbox.url.endswith("?v=x") and "?v=x" not in await sandbox.evaluate("location.href")
        await env.close()
    finally:
        await sandbox.close()


async def test_a_kept_page_posts_again_for_a_task_that_does_not_take_events(provider, site_server) -> None:
    """The hand-over is the task's choice per episode: the next episode in the same page,
    by a task that leaves the events to the page, posts them over HTTP (as a page that no
    harness drives does) and gets the same verdicts."""
    task = next(t for t in goal_tasks(tiny_shop()) if t.difficulty >= 2)
    sandbox = await provider.new_browser()
    try:
        verdicts = []
        for take in (True, False):
            env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server), take_events=take), sandbox, max_steps=30)
            await env.reset(seed=1)
            requests: list[str] = []
            sandbox.page.on("request", lambda request, into=requests: into.append(request.url))
            steps = []
            for _ in range(30):
                action = await env.oracle_action()
                assert action is not None
                _, _, done, _, info = await env.step(action)
                steps.append(info.verdict.model_dump())
                if done:
                    break
            assert info.success
            assert (_event_posts(requests) == []) == take
            verdicts.append(steps)
            await env.close()
        assert verdicts[0] == verdicts[1]
    finally:
        await sandbox.close()


async def test_the_observed_url_is_the_pages_address_and_the_browsers_stays(provider, site_server) -> None:
    """With a sandbox that reports the page's address (``BrowserSandbox.show_address``),
    swapping a page in leaves the browser's URL as loaded (no same-document navigation per
    step) and the observation's URL is the page's own: its session, route and ?v=<seq>. A
    kept page shows the next episode's session the same way and sends its events there,
    taken or posted."""
    task = next(t for t in goal_tasks(tiny_shop()) if t.difficulty >= 2)
    sandbox = await provider.new_browser()
    try:
        loaded = None
        for take in (True, False):
            env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server), take_events=take), sandbox, max_steps=30)
            obs, _ = await env.reset(seed=1)
            sid = env.task.session_id
            assert sid is not None and obs.url.startswith(site_server.session_url(sid))
            loaded = loaded or await sandbox.evaluate("location.href")  # the first episode's load
            routes = set()
            for _ in range(30):
                obs, _, done, _, info = await env.step(await env.oracle_action())
                route = str(await sandbox.evaluate("document.body.getAttribute('data-route')")).lstrip("/")
                seq, _ = site_server.page_digest(sid)
                assert obs.url == f"{site_server.session_url(sid)}{route}?v={seq}"
                assert obs.url == sandbox.url == await sandbox.evaluate("window.__fsm.address")
                assert await sandbox.evaluate("location.href") == loaded
                routes.add(route)
                if done:
                    break
            assert info.success and len(routes) > 1, routes
            await env.close()
    finally:
        await sandbox.close()
