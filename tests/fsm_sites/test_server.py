"""The site server over real HTTP: control API, malformed events, concurrent sessions."""

from __future__ import annotations

import asyncio
import json
import random
import re

import aiohttp
import pytest
import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.errors import SpecInvalid
from fsm_sites.serving.server import SiteServer, event_key, resolve_sites, unpack_pages
from tests.fsm_sites.widgets_spec import TINY_SHOP, tiny_shop, widgets_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture
async def server():
    async with SiteServer([tiny_shop(), widgets_spec()]) as srv:
        yield srv


@pytest.fixture
async def http(server):
    """A client of both apps, holding the admin token (as the harness does)."""
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.admin_token}"}) as client:
        yield client


async def _create(http, server, **body) -> dict:
    async with http.post(f"{server.control_url}/sessions", json=body) as resp:
        assert resp.status == 201, await resp.text()
        return await resp.json()


async def test_control_api_round_trip(server, http) -> None:
    created = await _create(http, server, site="tiny_shop", goal="lamp_in_cart", seed=3)
    sid, ctl = created["session_id"], f"{server.control_url}/sessions/{created['session_id']}"
    assert created["url"] == f"{server.site_url}/s/{sid}/" and created["distance"] == 2
    async with http.get(created["url"]) as resp:
        assert resp.status == 200 and 'data-el="lamp"' in await resp.text()
    async with http.post(f"{server.site_url}/s/{sid}/event",
                         json={"page": "home", "element": "lamp", "event": "click", "value": None}) as resp:
        answer = await resp.json()
    assert (answer["ok"], answer["seq"]) == (True, 1)
    async with http.get(created["url"]) as resp:  # the answer carries the new state's page
        assert answer["html"] == await resp.text() and 'data-page="product_lamp"' in answer["html"]
    async with http.get(f"{ctl}/state") as resp:
        body = await resp.json()
        assert body["page"] == "product_lamp" and body["distance"] == 1 and not body["goal_reached"]
    async with http.post(f"{ctl}/event", json={"page": "product_lamp", "element": "add", "event": "click"}) as resp:
        record = await resp.json()
        assert record["seq"] == 2 and record["verdict"]["goal_reached"] and record["verdict"]["on_shortest_path"]
    async with http.get(f"{ctl}/events") as resp:
        verdicts = [e["verdict"] for e in (await resp.json())["events"]]
        assert [v["transition_id"] for v in verdicts] == ["open_lamp", "add_lamp"]
        assert [(v["distance_before"], v["distance_after"]) for v in verdicts] == [(2, 1), (1, 0)]
    async with http.get(f"{ctl}/events?since=1") as resp:
        assert [e["seq"] for e in (await resp.json())["events"]] == [2]
    async with http.post(f"{ctl}/reset") as resp:
        assert (await resp.json())["state"] == Machine(tiny_shop()).initial.key()
    target = 'cart{"cart":["mug"],"name":"","ordered":false,"qty":1,"shipping":"standard"}'
    async with http.post(f"{ctl}/jump", json={"state": target}) as resp:
        assert (await resp.json())["state"] == target
    async with http.get(created["url"]) as resp:
        assert "Your cart" in await resp.text()
    async with http.delete(ctl) as resp:
        assert resp.status == 200
    async with http.get(f"{ctl}/state") as resp:
        assert resp.status == 404 and "expected a live session id" in (await resp.json())["error"]


async def test_create_accepts_target_state_and_start_state(server, http) -> None:
    machine = Machine(tiny_shop())
    target = machine.graphs.graph().states[5]
    created = await _create(http, server, site="tiny_shop", goal=target.key(), start_state=target.key())
    assert created["goal_reached"] and created["distance"] == 0


async def test_a_state_key_from_before_the_site_gained_a_variable_still_names_its_state(server, http) -> None:
    """A tasks file written before the site had ``shipping``: its keys lack the variable,
    which then takes its initial value; a variable the site lacks is refused."""
    machine = Machine(tiny_shop())
    target = next(s for s in machine.graphs.graph().states if s.page == "cart" and dict(s.vars)["cart"])
    assert dict(target.vars)["shipping"] == "standard"  # the initial value
    old = State(target.page, tuple(v for v in target.vars if v[0] != "shipping"))
    created = await _create(http, server, site="tiny_shop", goal=old.key(), start_state=old.key())
    assert created["goal_reached"] and created["distance"] == 0 and created["state"] == target.key()
    alien = State(target.page, (*target.vars, ("zz_colour", "red")))
    async with http.post(f"{server.control_url}/sessions",
                         json={"site": "tiny_shop", "goal": "lamp_in_cart", "start_state": alien.key()}) as resp:
        assert resp.status == 400 and "got unknown ['zz_colour']" in (await resp.json())["error"]


@pytest.mark.parametrize("body, fragment", [
    ({"site": "nope", "goal": "x"}, "expected a site served here"),
    ({"site": "tiny_shop", "goal": "fly"}, "expected goal as a goal id"),
    ({"site": "tiny_shop", "goal": "lamp_in_cart", "start_state": "moon"}, "reachable"),
    ({"site": "tiny_shop", "goal": "lamp_in_cart", "seed": "x"}, "'seed' to be an integer"),
    ({"site": "tiny_shop", "goal": "lamp_in_cart", "colour": 1}, "extra ['colour']"),
])
async def test_create_rejects_bad_requests(server, http, body, fragment) -> None:
    async with http.post(f"{server.control_url}/sessions", json=body) as resp:
        assert resp.status == 400
        assert fragment in (await resp.json())["error"]


@pytest.mark.parametrize("raw, status, fragment", [
    ("{not json", 400, "invalid JSON"),
    ('["home"]', 400, "expected a JSON object"),
    (json.dumps({"page": "home", "element": "ghost", "event": "click"}), 400, "got 'ghost'"),
    (json.dumps({"page": "home", "element": "lamp", "event": "select", "value": "x"}), 400, "expected event in"),
    (json.dumps({"page": "cart", "element": "back", "event": "click"}), 409, "reload the page"),
    (json.dumps({"page": "home", "element": "lamp", "event": "click", "extra": 1}), 400, "extra ['extra']"),
    (json.dumps({"page": "home", "element": 5, "event": "click"}), 400, "'element' to be a string"),
])
async def test_malformed_events_are_refused_and_change_nothing(server, http, raw, status, fragment) -> None:
    session = server.create_session("tiny_shop", goal="lamp_in_cart")
    before = server.state(session.id)
    async with http.post(f"{server.site_url}/s/{session.id}/event", data=raw) as resp:
        assert resp.status == status
        assert fragment in (await resp.json())["error"]
    assert server.state(session.id) == before and server.events(session.id) == []


async def test_unknown_session_event_is_404(server, http) -> None:
    body = {"page": "home", "element": "lamp", "event": "click"}
    async with http.post(f"{server.site_url}/s/nobody/event", json=body) as resp:
        assert resp.status == 404


async def test_event_that_fires_nothing_is_logged_without_transition(server) -> None:
    session = server.create_session("widgets", goal="oslo_dark")
    start = server.state(session.id)
    for event in (UIEvent("general", "help", "click"), UIEvent("general", "city", "input", "Rome")):
        record = server.send_event(session.id, event)
        assert not record.verdict.transition_fired and not record.verdict.on_shortest_path
        assert record.verdict.state_before == record.verdict.state_after == start.key()
        assert record.verdict.distance_delta == 0
    assert server.state(session.id) == start and [r.seq for r in server.events(session.id)] == [1, 2]


async def test_concurrent_sessions_never_share_state(server, http) -> None:
    """Random event streams on many sessions, over HTTP, interleaved; each matches its own replay."""
    machine = Machine(widgets_spec())
    sessions = [server.create_session("widgets", goal="see_beta", seed=i) for i in range(12)]

    async def drive(index: int) -> list[UIEvent]:
        rng, state, sent = random.Random(index), machine.initial, []
        for _ in range(25):
            options = machine.enabled(state)
            edge, state = options[rng.randrange(len(options))]
            sent.append(edge.to_event())
            payload = {"page": edge.page, "element": edge.element, "event": edge.event, "value": edge.value}
            async with http.post(f"{server.site_url}/s/{sessions[index].id}/event", json=payload) as resp:
                assert resp.status == 200, await resp.text()
            await asyncio.sleep(0)
        return sent

    streams = await asyncio.gather(*(drive(i) for i in range(len(sessions))))
    for session, sent in zip(sessions, streams, strict=True):
        state: State = machine.initial
        for event in sent:
            state = machine.step(state, event)[1]
        assert server.state(session.id) == state
        assert [r.event for r in server.events(session.id)] == sent


async def test_a_replaced_site_is_rendered_anew(server) -> None:
    before = server.create_session("tiny_shop", goal="lamp_in_cart")
    assert "Renamed Shop" not in server.render(before)
    server.add_site(tiny_shop().model_copy(update={"title": "Renamed Shop"}))
    after = server.create_session("tiny_shop", goal="lamp_in_cart")
    assert "Renamed Shop" in server.render(after) and "Renamed Shop" not in server.render(before)


async def test_a_spec_file_to_serve_is_validated(tmp_path) -> None:
    data = yaml.safe_load(TINY_SHOP.read_text())
    data["transitions"][0]["when"] = [{"var": "ghost", "op": "empty"}]
    path = tmp_path / "shop.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecInvalid, match=r"transitions\.open_cart\.when\[0\]\.var: 'ghost' is not a variable"):
        SiteServer(resolve_sites([path]))


async def test_next_pages_are_the_pages_their_events_lead_to(server, http) -> None:
    """The prefetch names, for each event with a value known in advance, the page that event
    leads to (what the answer would carry); an event naming that page's digest is answered
    without one, any other with the page."""
    created = await _create(http, server, site="widgets", goal="see_beta", seed=7)
    sid = created["session_id"]
    async with http.post(f"{server.site_url}/s/{sid}/next") as resp:
        packed = await resp.json()
    prefetched = server.next_pages(sid)
    assert prefetched["seq"] == packed["seq"] == 0 and packed["events"] == prefetched["events"]
    assert unpack_pages(packed) == prefetched["pages"]  # the stylesheet and script go once
    assert len(packed["parts"]) == 2 and len(json.dumps(packed)) < len(json.dumps(prefetched)) / 2
    keys = {tuple(json.loads(key)) for key in prefetched["events"]}
    assert ("general", "tab_items", "click", None) not in keys  # keys name no page
    assert ("tab_items", "click", None) in keys and ("newsletter", "check", None) in keys
    assert ("size", "select", "l") in keys
    assert not any(event == "input" for _, event, _ in keys)  # typed text is the agent's
    assert set(prefetched["pages"]) == set(prefetched["events"].values())
    for key, digest in prefetched["events"].items():
        element, event, value = json.loads(key)
        other = server.create_session("widgets", goal="see_beta", seed=7)
        server.send_event(other.id, UIEvent("general", element, event, value))
        assert server.page_digest(other.id) == (1, digest)
        assert server.render(server.store.get(other.id)) == prefetched["pages"][digest]
    tab = prefetched["events"][event_key("tab_items", "click", None)]
    event = {"page": "general", "element": "tab_items", "event": "click", "value": None}
    async with http.post(f"{server.site_url}/s/{sid}/event", json={**event, "expect": tab}) as resp:
        assert await resp.json() == {"ok": True, "seq": 1, "digest": tab}
    async with http.get(f"{server.control_url}/sessions/{sid}/digest") as resp:
        assert await resp.json() == {"seq": 1, "digest": tab}
    back = {"page": "items", "element": "tab_general", "event": "click", "value": None}
    async with http.post(f"{server.site_url}/s/{sid}/event", json={**back, "expect": tab}) as resp:
        answer = await resp.json()
    assert answer["seq"] == 2 and 'data-page="general"' in answer["html"]  # not the page expected


async def test_an_answer_carries_only_the_body_when_the_page_holds_the_same_head_and_script(server, http) -> None:
    """An event that names the page it was sent from (``shown``: the digest an earlier
    answer gave) is answered with the new page's ``<body ...>`` up to its closing script
    when both pages share head and script: with them, exactly the new page. A page the
    server does not know gets the whole page; ``page_event`` (what the hand-over calls) answers alike."""
    created = await _create(http, server, site="widgets", goal="see_beta", seed=7)
    sid = created["session_id"]
    shown = server.page_digest(sid)[1]
    first = server.render(server.store.get(sid))
    event = {"page": "general", "element": "tab_items", "event": "click", "value": None}
    async with http.post(f"{server.site_url}/s/{sid}/event", json={**event, "shown": shown}) as resp:
        answer = await resp.json()
    page = server.render(server.store.get(sid))
    assert answer["seq"] == 1 and answer["digest"] == server.page_digest(sid)[1] and "html" not in answer
    title = re.search(r"<title>[^<]*</title>", first)
    assert title is not None and title.group(0) not in answer["body"]  # another page: another title
    new_title, body = answer["body"].split("</title>", 1)
    rebuilt = (first[:title.start()] + new_title + "</title>" + first[title.end():first.index("</head><body") + 7]
               + body + first[first.rindex("<script"):])
    assert rebuilt == page and 'data-page="items"' in body
    assert len(answer["body"]) < len(page) / 4
    back = {"page": "items", "element": "tab_general", "event": "click", "value": None}
    status, unknown = server.page_event(sid, json.dumps({**back, "shown": "not-a-digest"}))
    assert status == 200 and unknown["html"] == server.render(server.store.get(sid)) and "body" not in unknown
    status, stale = server.page_event(sid, json.dumps(back))  # that page is gone now
    assert status == 409 and stale["kind"] == "StaleEvent" and "seq" not in stale
