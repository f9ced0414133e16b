"""The site client: the in-process and the HTTP implementation answer alike, and an FSM task
runs over either (in Chromium) without touching the server's internals."""

from __future__ import annotations

import pytest

from fsm_sites.engine.state import UIEvent
from fsm_sites.serving.client import HttpSiteClient, LocalSiteClient, SiteUnavailable
from fsm_sites.serving.server import SiteServer
from fsm_sites.serving.sessions import BadRequest, StaleEvent, UnknownSession
from harness.env import AsyncEnv
from harness.tasks.fsm import FSMTask, goal_tasks
from tests.fsm_sites.widgets_spec import tiny_shop, widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([tiny_shop()]) as server:
        yield server


@pytest.fixture
async def clients(server):
    http = HttpSiteClient(server.control_url, server.site_url, token=server.admin_token)
    yield LocalSiteClient(server), http
    await http.close()


async def test_both_clients_answer_alike(server, clients) -> None:
    local, http = clients
    assert local.site_url == http.site_url == server.site_url
    for client in clients:
        assert await client.has_site("tiny_shop") and not await client.has_site("nope")
        view = await client.create_session("tiny_shop", goal="lamp_in_cart", seed=3)
        assert view.url == server.session_url(view.id) and view.distance == 2 and view.seq == 0
        edge = await client.oracle_edge(view.id)
        assert edge is not None and edge.page == view.page
        server.send_event(view.id, edge.to_event())  # as the page would
        [record] = await client.events(view.id)
        assert record.verdict.on_shortest_path and record.verdict.distance_after == 1
        assert (await client.session(view.id)).seq == 1
        html = await client.page_html(view.id)
        assert html == server.render(server.store.get(view.id))
        jumped = await client.jump(view.id, view.state)
        assert jumped.state == view.state and jumped.distance == 2
        await client.delete_session(view.id)
        await client.delete_session(view.id)  # idempotent
        with pytest.raises(UnknownSession):
            await client.session(view.id)
        with pytest.raises(BadRequest, match="goal"):
            await client.create_session("tiny_shop", goal="fly_to_the_moon")


async def test_http_add_site_and_unreachable_server(server, clients) -> None:
    _, http = clients
    await http.add_site(widgets_spec())
    assert await http.has_site(widgets_spec().name)
    with pytest.raises(BadRequest, match="POST /sites"):
        await http.add_site(widgets_spec().model_copy(update={"start_page": "nowhere"}))
    gone = HttpSiteClient("http://127.0.0.1:9", server.site_url, token="t", timeout_s=2)
    try:
        with pytest.raises(SiteUnavailable, match="control API"):
            await gone.has_site("tiny_shop")
    finally:
        await gone.close()


async def test_an_fsm_task_runs_over_http(provider, server) -> None:
    task = next(t for t in goal_tasks(tiny_shop()) if t.goal == "lamp_in_cart")
    http = HttpSiteClient(server.control_url, server.site_url, token=server.admin_token)
    sandbox = await provider.new_browser()
    env = AsyncEnv(FSMTask(task, http), sandbox)
    try:
        await env.reset(seed=1)
        info = None
        for _ in range(20):
            _, _, terminated, _, info = await env.step(await env.oracle_action())
            if terminated:
                break
        assert info is not None and info.success and info.verdict.goal_reached
    finally:
        await env.close()
        await sandbox.close()
        await http.close()
    assert server.store.sessions == {}  # the task deleted its session over HTTP


async def test_event_records_round_trip() -> None:
    from fsm_sites.serving.sessions import EventRecord
    from fsm_sites.serving.verdict import StepVerdict

    verdict = StepVerdict(state_before="a", state_after="b", transition_fired=True, transition_id="t",
                          on_shortest_path=True, distance_before=2, distance_after=1, goal_reached=False)
    record = EventRecord(4, UIEvent("home", "buy", "click", None), verdict)
    assert EventRecord.from_dict(record.to_dict()) == record


async def test_both_clients_give_the_page_as_data_and_take_a_native_apps_events(server, clients) -> None:
    local, http = clients
    assert local.control_url == http.control_url == server.control_url
    for client in clients:
        view = await client.create_session("tiny_shop", goal="lamp_in_cart", seed=1)
        data = await client.page_view(view.id)
        assert data["seq"] == 0 and data["state"] == view.state and data["view"]["page"] == view.page
        edge = await client.oracle_edge(view.id)
        assert edge is not None
        shown = {(e["id"], e["value"]) for e in data["view"]["elements"]}
        assert (edge.element, edge.value) in shown or any(e["id"] == edge.element for e in data["view"]["elements"])
        record = await client.send_event(view.id, edge.to_event())
        assert record.seq == 1 and record.verdict.transition_fired and record.verdict.on_shortest_path
        assert (await client.page_view(view.id))["seq"] == 1
        with pytest.raises(StaleEvent):  # sent from the page the session has left
            await client.send_event(view.id, edge.to_event())
        await client.delete_session(view.id)
