"""The env server over real HTTP: the token, sessions, verdicts, and bodies refused clearly."""

from __future__ import annotations

import base64
import json

import aiohttp
import pytest

from harness.server.client import RemoteEnvs
from harness.server.errors import EnvServerBusy
from tests.harness.server.conftest import TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}
ENDPOINTS = [("GET", "/schema"), ("GET", "/metadata"), ("GET", "/tasks"),
             ("GET", "/state"), ("POST", "/reset"), ("POST", "/step"), ("POST", "/oracle"),
             ("POST", "/jump"), ("POST", "/observe"), ("POST", "/close")]


async def call(http: aiohttp.ClientSession, method: str, url: str, body: object = None,
               **kwargs) -> tuple[int, dict]:
    data = body if isinstance(body, str) else json.dumps(body) if body is not None else None
    async with http.request(method, url, data=data, **kwargs) as resp:
        return resp.status, await resp.json(content_type=None)


async def test_every_call_but_health_needs_the_token(served) -> None:
    async with aiohttp.ClientSession() as http:
        for method, path in ENDPOINTS:
            status, body = await call(http, method, served.url + path, {"seed": 0})
            assert (status, body["code"]) == (401, "UNAUTHORIZED"), path
            assert "expected the server's token, got none" in body["detail"]
            status, body = await call(http, method, served.url + path, {"seed": 0},
                                      headers={"Authorization": "Bearer wrong"})
            assert status == 401 and "a token it does not know" in body["detail"], path
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(served.url + "/ws")
        assert refused.value.status == 401
        basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
        status, body = await call(http, "GET", served.url + "/metadata",
                                  headers={"Authorization": f"Basic {basic}"})
        assert status == 200 and body["name"] == "cua-harness"
    assert served.pool.sessions == {}


async def test_an_http_session_plays_an_episode_with_step_verdicts(served) -> None:
    async with aiohttp.ClientSession(headers=AUTH) as http:
        async with http.post(served.url + "/reset", json={
                "seed": 0, "task": "fsm:shop", "options": {"reward": "step"},
                "open_session": True}) as resp:
            assert resp.status == 200
            reset = await resp.json()
            session = resp.headers["X-Session-Id"]
        obs = reset["observation"]
        meta = obs["metadata"]
        assert meta["session_id"] == session and meta["kind"] == "reset" and meta["can_jump"]
        assert reset["reward"] is None and reset["done"] is False
        png = base64.b64decode(obs["screenshot"])
        assert png.startswith(b"\x89PNG") and obs["image_format"] == "png"
        assert meta["reset_info"]["task"] == "fsm:shop" and meta["reset_info"]["start_distance"] == 2

        rewards, verdicts = [], []
        for turn in range(2):
            _, oracle = await call(http, "POST", served.url + "/oracle", {"session_id": session})
            action = oracle["action"]
            # once as an action dict, once as model text decoded on the server
            sent = action if turn == 0 else {"text": json.dumps(action), "codec": "json"}
            status, step = await call(http, "POST", served.url + "/step",
                                      {"session_id": session, "action": sent})
            assert status == 200, step
            rewards.append(step["reward"])
            verdicts.append(step["observation"]["metadata"]["step_info"]["verdict"])
        assert rewards == [0.5, 1.5] and step["done"] is True
        assert [v["on_shortest_path"] for v in verdicts] == [True, True]
        assert [v["distance_after"] for v in verdicts] == [1, 0] and verdicts[1]["goal_reached"]
        info = step["observation"]["metadata"]["step_info"]
        assert info["success"] and info["action_text"] == json.dumps(action)
        assert step["observation"]["metadata"]["terminated"]

        status, state = await call(http, "GET", served.url + f"/state?session_id={session}")
        assert status == 200 and state["step_count"] == 2 and state["done"] and state["task"] == "fsm:shop"
        status, again = await call(http, "POST", served.url + "/step",
                                   {"session_id": session, "action": action})
        assert (status, again["code"]) == (409, "SESSION_ERROR")
        assert "expected a reset after the episode ended" in again["detail"]
        assert (await call(http, "POST", served.url + "/close", {"session_id": session}))[0] == 200
        status, gone = await call(http, "GET", served.url + f"/state?session_id={session}")
        assert (status, gone["code"]) == (404, "SESSION_ERROR")
    assert served.pool.sessions == {}


async def test_bodies_are_validated_with_clear_errors(served) -> None:
    url = served.url
    async with aiohttp.ClientSession(headers=AUTH) as http:
        status, body = await call(http, "POST", url + "/reset", "{not json")
        assert (status, body["code"]) == (400, "INVALID_JSON")
        status, body = await call(http, "POST", url + "/reset", {"sed": 1})
        assert status == 422 and "sed: extra inputs are not permitted, got 1" in body["detail"]
        status, body = await call(http, "POST", url + "/reset", {"task": "miniwob:book-flight"})
        assert status == 422 and "expected a task this server serves" in body["detail"]
        status, body = await call(http, "POST", url + "/reset",
                                  {"task": "fsm:shop", "options": {"reward": "bogus"}})
        assert status == 422 and "options: 1 bad field(s): reward" in body["detail"]
        status, body = await call(http, "POST", url + "/step",
                                  {"session_id": "nope", "action": {"type": "done"}})
        assert (status, body["code"]) == (404, "SESSION_ERROR")
        status, body = await call(http, "GET", url + "/state")
        assert status == 422 and "expected ?session_id=" in body["detail"]
        status, body = await call(http, "GET", url + "/nowhere")
        assert status == 404 and "GET /nowhere" in body["detail"]
        assert served.pool.sessions == {}  # refused resets leave no session behind

        _, reset = await call(http, "POST", url + "/reset",
                              {"task": "miniwob:click-test", "seed": 1, "open_session": True})
        session = reset["observation"]["metadata"]["session_id"]
        status, body = await call(http, "POST", url + "/step",
                                  {"session_id": session, "action": {"text": "x", "codec": "qwn"}})
        assert status == 422 and "action.codec" in body["detail"] and "qwen" in body["detail"]
        status, body = await call(http, "POST", url + "/step", {"session_id": session, "action": [1]})
        assert status == 422 and "action: input should be a valid dictionary" in body["detail"]
        status, body = await call(http, "POST", url + "/step",
                                  {"session_id": session, "action": {"type": "click", "x": -5}})
        assert (status, body["code"]) == (422, "VALIDATION_ERROR") and "click.x" in body["detail"]
        await call(http, "POST", url + "/close", {"session_id": session})


async def test_concurrent_sessions_keep_their_own_episodes_up_to_the_limit(served) -> None:
    envs = RemoteEnvs(served.url, TOKEN)
    opened = []
    try:
        await envs.start()
        for task in ("fsm:shop", "miniwob:click-test", "fsm:shop", "miniwob:click-button"):
            opened.append(await envs.open(task, served.pool.defaults))
        resets = [await env.reset(seed=i) for i, env in enumerate(opened)]
        assert [info.task for _, info in resets] == ["fsm:shop", "miniwob:click-test",
                                                    "fsm:shop", "miniwob:click-button"]
        assert len({info.episode_id for _, info in resets}) == 4
        assert len(served.pool.sessions) == 4
        extra = await envs.open("fsm:shop", served.pool.defaults)
        with pytest.raises(EnvServerBusy, match="all 4 in use"):
            await extra.reset(seed=9)
        # the two shop sessions step apart: one goes on, the other is still at its start
        action = await opened[0].oracle_action()
        first = await opened[0].step(action)
        assert first[4].verdict.distance_after == 1
        assert (await opened[2].observe()).step == 0
    finally:
        await envs.close()
    assert served.pool.sessions == {}
