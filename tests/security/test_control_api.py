"""The site server's control API from the agent's side (docs/security.md): without the
admin token nothing is written, a session's capability token reads that session only, the
page's own event path still works and the page never holds a token, and an FSM episode
driven over the tokened client scores as before."""

from __future__ import annotations

import aiohttp
import pytest

from fsm_sites.engine.state import UIEvent
from fsm_sites.serving.client import HttpSiteClient
from fsm_sites.serving.server import SiteServer
from harness.env import AsyncEnv
from harness.tasks.fsm import FSMTask, goal_tasks
from tests.fsm_sites.widgets_spec import tiny_shop

pytestmark = pytest.mark.asyncio(loop_scope="session")

LAMP = {"page": "home", "element": "lamp", "event": "click", "value": None}


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([tiny_shop()]) as server:
        yield server


async def _call(http: aiohttp.ClientSession, method: str, url: str, token: str | None = None,
                body: object = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with http.request(method, url, json=body, headers=headers) as resp:
        return resp.status, await resp.json(content_type=None)


def goal_state(server: SiteServer, site: str, goal: str) -> str:
    """The state key the oracle's path ends in (what a jump to the goal would name)."""
    scratch = server.create_session(site, goal=goal)
    while (edge := server.oracle_edge(scratch.id)) is not None:
        value = None if edge.value is None else str(edge.value)
        server.send_event(scratch.id, UIEvent(edge.page, edge.element, edge.event, value))
    key = server.state(scratch.id).key()
    server.delete_session(scratch.id)
    return key


def write_calls(server: SiteServer, sid: str, goal: str) -> list[tuple[str, str, object]]:
    ctl = f"{server.control_url}/sessions/{sid}"
    spec = tiny_shop().model_copy(update={"title": "Replaced"}).model_dump(mode="json")
    return [("POST", f"{ctl}/jump", {"state": goal}), ("POST", f"{ctl}/event", {**LAMP}),
            ("POST", f"{ctl}/reset", None), ("DELETE", ctl, None),
            ("POST", f"{server.control_url}/sites", {"spec": spec}),
            ("POST", f"{server.control_url}/sessions", {"site": "tiny_shop", "goal": "lamp_in_cart"}),
            ("GET", f"{ctl}/oracle", None)]


async def test_without_the_admin_token_no_write_is_taken(server) -> None:
    session = server.create_session("tiny_shop", goal="lamp_in_cart")
    goal = goal_state(server, "tiny_shop", "lamp_in_cart")
    machine, start = server.store.machines["tiny_shop"], session.state
    async with aiohttp.ClientSession() as http:
        for method, url, body in write_calls(server, session.id, goal):
            status, answer = await _call(http, method, url, None, body)
            assert (status, answer["kind"]) == (401, "Unauthorized"), (method, url, answer)
            assert "Authorization: Bearer" in answer["error"] and "admin token" in answer["error"]
            status, answer = await _call(http, method, url, "guessed", body)
            assert (status, answer["kind"]) == (403, "Forbidden"), (method, url, answer)
        status, _ = await _call(http, "GET", f"{server.control_url}/health")
        assert status == 200  # the one open call
    assert server.store.get(session.id).state == start and session.seq == 0 and not session.log
    assert server.store.machines["tiny_shop"] is machine  # the site was not replaced
    assert set(server.store.sessions) == {session.id}
    server.delete_session(session.id)


async def test_a_session_token_reads_its_own_session_and_nothing_else(server) -> None:
    mine = server.create_session("tiny_shop", goal="lamp_in_cart")
    other = server.create_session("tiny_shop", goal="lamp_in_cart")
    goal = goal_state(server, "tiny_shop", "lamp_in_cart")
    ctl = f"{server.control_url}/sessions"
    async with aiohttp.ClientSession() as http:
        for path in ("", "/state", "/events", "/html", "/view", "/digest"):
            status, _ = await _call(http, "GET", f"{ctl}/{mine.id}{path}", mine.token)
            assert status == 200, path
            status, answer = await _call(http, "GET", f"{ctl}/{other.id}{path}", mine.token)
            assert (status, answer["kind"]) == (403, "Forbidden"), path
            assert "capability token" in answer["error"]
        for method, url, body in write_calls(server, mine.id, goal):
            status, answer = await _call(http, method, url, mine.token, body)
            assert (status, answer["kind"]) == (403, "Forbidden"), (method, url, answer)
        # The page's own path takes its events with no token at all, and only its events.
        status, answer = await _call(http, "POST", f"{server.site_url}/s/{mine.id}/event", None, LAMP)
        assert status == 200 and answer["seq"] == 1
        status, page = await _call(http, "GET", f"{server.site_url}/s/{mine.id}/view")
        assert status == 200 and set(page) == {"seq", "view"}  # no state key: only what it shows
        for path in ("jump", "reset", "sites"):
            async with http.post(f"{server.site_url}/s/{mine.id}/{path}", json={"state": goal}) as resp:
                assert resp.status in (404, 405), path
    assert not server.state(mine.id).page == "cart" and not mine.goal_fn(mine.state)
    assert other.seq == 0 and other.state == other.start
    server.delete_session(mine.id)
    server.delete_session(other.id)


async def test_an_fsm_episode_over_the_tokened_client_scores_and_its_page_holds_no_token(provider, server) -> None:
    task = next(t for t in goal_tasks(tiny_shop()) if t.goal == "lamp_in_cart")
    http = HttpSiteClient(server.control_url, server.site_url, token=server.admin_token)
    sandbox = await provider.new_browser()
    env = AsyncEnv(FSMTask(task, http), sandbox)
    try:
        await env.reset(seed=1)
        sid = env.task.session_id
        assert sid is not None
        secrets = (server.admin_token, http.session_token(sid))
        rewards, info = [], None
        for _ in range(10):
            seen = await sandbox.evaluate("[location.href, document.documentElement.outerHTML, "
                                          "document.cookie, JSON.stringify(localStorage)].join(' ')")
            assert not any(secret in seen for secret in secrets)
            _, reward, terminated, _, info = await env.step(await env.oracle_action())
            rewards.append(reward)
            if terminated:
                break
        assert info is not None and info.success and info.verdict.goal_reached
        assert rewards == [0.0, 1.0]
    finally:
        await env.close()
        await sandbox.close()
        await http.close()
    assert server.store.sessions == {}
