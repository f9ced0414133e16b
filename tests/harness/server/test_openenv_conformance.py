"""`cua env-server` behaves as an OpenEnv server, checked with openenv-core's own client (over
the WebSocket) and a raw HTTP client: reset/step/state, validation errors that cost no step,
a stateless HTTP /reset, an open /health, capacity, auth, and oversized bodies (413)."""

from __future__ import annotations

import json

import aiohttp
import pytest

from tests.harness.server.conftest import CAPPED_BODY_BYTES, TOKEN

generic = pytest.importorskip("openenv.core.generic_client")

TASK = "miniwob:click-test"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def call(http: aiohttp.ClientSession, method: str, url: str, body: object = None,
               **kwargs) -> tuple[int, dict]:
    async with http.request(method, url, json=body, **kwargs) as resp:
        return resp.status, await resp.json(content_type=None)


def client(url: str, token: str = TOKEN) -> generic.GenericEnvClient:
    return generic.GenericEnvClient(base_url=url.replace("http://", f"http://user:{token}@"))


async def test_the_openenv_client_plays_and_is_refused_as_openenv_refuses(capped) -> None:
    async with client(capped.url) as env:
        result = await env.reset(seed=1, task=TASK)
        assert result.reward is None and not result.done and result.observation["step"] == 0
        # a structured action off the schema: VALIDATION_ERROR, no step taken
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            await env.step({"type": "click", "x": -5, "y": 3})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            await env.step({"type": "teleport"})
        assert (await env.state())["step_count"] == 0
        # model text that does not parse: the agent's mistake, a step
        result = await env.step({"text": "click somewhere nice", "codec": "json"})
        assert result.observation["step"] == 1 and result.observation["last_action_error"]
        result = await env.step({"type": "wait", "seconds": 0.0})
        assert result.observation["step"] == 2 and result.observation["last_action_error"] is None
        assert (await env.state())["step_count"] == 2
        # capacity: the two sessions of the server are this one and the next
        async with client(capped.url) as second:
            await second.reset(seed=2, task=TASK)
            async with client(capped.url) as third:
                with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                    await third.reset(seed=3, task=TASK)
    with pytest.raises(ConnectionError, match="HTTP 401"):
        async with client(capped.url, token="wrong"):
            pass


async def test_raw_http_as_openenv_answers_it(capped) -> None:
    url = capped.url
    async with aiohttp.ClientSession() as http:
        assert await call(http, "GET", url + "/health") == (200, {"status": "healthy"})
        status, body = await call(http, "GET", url + "/schema")
        assert (status, body["code"]) == (401, "UNAUTHORIZED")
    async with aiohttp.ClientSession(headers=AUTH) as http:
        # stateless resets hold nothing: three of them on a server of two sessions
        for seed in range(3):
            status, body = await call(http, "POST", url + "/reset", {"seed": seed, "task": TASK})
            assert status == 200 and body["observation"]["metadata"]["session_id"] is None
        assert capped.pool.sessions == {}
        status, health = await call(http, "GET", url + "/health")
        assert health == {"status": "healthy", "active_sessions": 0, "max_sessions": 2}

        _, reset = await call(http, "POST", url + "/reset",
                              {"seed": 1, "task": TASK, "open_session": True})
        session = reset["observation"]["metadata"]["session_id"]
        status, body = await call(http, "POST", url + "/step",
                                  {"session_id": session, "action": {"type": "scroll", "dy": "up"}})
        assert (status, body["code"]) == (422, "VALIDATION_ERROR")
        assert body["errors"] and body["errors"][0]["loc"][0] == "scroll"
        status, body = await call(http, "POST", url + "/step",
                                  {"session_id": session, "action": {"text": "{oops", "codec": "json"}})
        assert status == 200 and body["observation"]["last_action_error"]
        _, state = await call(http, "GET", url + f"/state?session_id={session}")
        assert state["step_count"] == 1

        # capacity over HTTP: a second session fits, a third does not
        _, other = await call(http, "POST", url + "/reset",
                              {"seed": 2, "task": TASK, "open_session": True})
        status, body = await call(http, "POST", url + "/reset", {"seed": 3, "task": TASK})
        assert (status, body["code"]) == (503, "CAPACITY_REACHED")

        huge = json.dumps({"session_id": session, "action": {"text": "x" * CAPPED_BODY_BYTES}})
        async with http.post(url + "/step", data=huge) as resp:
            status, body = resp.status, await resp.json()
        assert (status, body["code"]) == (413, "PAYLOAD_TOO_LARGE")
        assert f"at most {CAPPED_BODY_BYTES} bytes" in body["detail"]
        for sid in (session, other["observation"]["metadata"]["session_id"]):
            await call(http, "POST", url + "/close", {"session_id": sid})
    assert capped.pool.sessions == {}
