"""The openai: agent against a fake endpoint (the transport seam): what it sends, what it
records, and every failure as a typed error, never a crash."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web

from harness.agents.base import AgentContext
from harness.agents.registry import make_agent
from harness.errors import ActionParseError, InfrastructureError
from harness.observation import Observation
from tests.harness.store.helpers import screenshot
from trainers.agents.openai_agent import OpenAIAgent
from trainers.errors import EndpointError, EndpointRejected

pytestmark = pytest.mark.asyncio(loop_scope="session")
REPLY = {"id": "x", "object": "chat.completion", "policy_version": 7, "prompt_token_ids": [1, 2, 3],
         "choices": [{"index": 0, "finish_reason": "stop", "token_ids": [11, 12],
                      "message": {"role": "assistant", "content": '{"type": "click", "x": 5, "y": 6}'},
                      "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -1.5}]}}]}


class FakeEndpoint:
    """Answers each request with the next scripted reply: (status, body) or "hang"."""

    def __init__(self) -> None:
        self.script: list[tuple[int, str] | str] = []
        self.requests: list[tuple[str, dict | None, dict]] = []
        self.ports: list[int | None] = []  # the client's side of each request's connection
        self.never = asyncio.Event()
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.method == "POST" else None
        self.requests.append((request.path, body, dict(request.headers)))
        self.ports.append(request.transport.get_extra_info("peername")[1] if request.transport else None)
        reply = self.script.pop(0) if self.script else (200, json.dumps(REPLY))
        if reply == "hang":
            await self.never.wait()  # set at teardown: the client has long given up
            reply = (200, json.dumps(REPLY))
        status, text = reply
        return web.Response(status=status, text=text, content_type="application/json")


@pytest_asyncio.fixture(loop_scope="session")
async def endpoint() -> AsyncIterator[FakeEndpoint]:
    fake = FakeEndpoint()
    app = web.Application()
    app.router.add_route("*", "/v1/{tail:.*}", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake.url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    yield fake
    fake.never.set()
    await runner.cleanup()


def observation() -> Observation:
    return Observation(screenshot=screenshot("home"), image_format="png", width=160, height=120,
                       instruction="Click Submit.", step=0)


def agent_for(url: str, query: str = "") -> OpenAIAgent:
    agent = make_agent(f"openai:{url}#tiny?retries=0&codec=json{query}")
    assert isinstance(agent, OpenAIAgent)
    return agent


async def test_sends_images_as_data_urls_and_records_tokens(endpoint, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    step = await agent_for(endpoint.url).act(observation(), AgentContext.for_episode("t", 0))
    path, body, headers = endpoint.requests[-1]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "tiny" and body["logprobs"] is True and body["return_token_ids"] is True
    assert isinstance(body["seed"], int) and body["temperature"] == 0.0
    image = body["messages"][1]["content"][0]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")
    assert base64.b64decode(image["image_url"]["url"].split(",", 1)[1]) == screenshot("home")
    assert step.text == '{"type": "click", "x": 5, "y": 6}' and step.token_ids == [11, 12]
    assert step.logprobs == [-0.5, -1.5] and step.prompt_token_ids == [1, 2, 3]
    assert step.policy_version == 7  # the server's, not the agent's


async def test_one_client_per_agent_keeps_its_connection(endpoint) -> None:
    agent = agent_for(endpoint.url)
    sampling = agent.sampling(1.0)
    for each in (agent, agent, sampling):
        await each.act(observation(), AgentContext.for_episode("t", 0))
    assert agent.client() is sampling.client()  # the openai SDK's client, made once
    assert len(set(endpoint.ports[-3:])) == 1  # one connection, not one per step


async def test_asks_the_endpoint_for_its_model_when_none_is_named(endpoint) -> None:
    endpoint.script = [(200, json.dumps({"data": [{"id": "served-one"}]}))]
    agent = make_agent(f"openai:{endpoint.url}?retries=0")
    await agent.act(observation(), AgentContext.for_episode("t", 0))
    assert [r[0] for r in endpoint.requests] == ["/v1/models", "/v1/chat/completions"]
    assert endpoint.requests[-1][1]["model"] == "served-one"


@pytest.mark.parametrize("script, match", [
    ([(500, '{"error": "boom"}')], "got 500"),
    ([(200, "not json at all")], "expected JSON"),
    ([(200, '{"choices": []}')], "expected a chat completion"),
    ([(429, "slow down")], "got 429"),
    (["hang"], "no reply in time"),
])
async def test_server_failures_are_infrastructure_errors(endpoint, script, match) -> None:
    endpoint.script = list(script)
    agent = agent_for(endpoint.url, "&timeout_s=0.3")
    with pytest.raises(EndpointError, match=match) as caught:
        await agent.act(observation(), AgentContext.for_episode("t", 0))
    assert isinstance(caught.value, InfrastructureError)  # the runner retries the episode


async def test_a_refused_request_is_the_agents_failure_with_the_servers_words(endpoint) -> None:
    endpoint.script = [(400, '{"error": {"message": "unknown field tools", "param": "tools"}}')]
    with pytest.raises(EndpointRejected, match="unknown field tools") as caught:
        await agent_for(endpoint.url).act(observation(), AgentContext.for_episode("t", 0))
    assert not isinstance(caught.value, InfrastructureError)


async def test_retries_a_flaky_endpoint_then_succeeds(endpoint) -> None:
    endpoint.script = [(503, "busy"), (502, "bad gateway")]
    agent = make_agent(f"openai:{endpoint.url}#tiny?retries=2")
    step = await agent.act(observation(), AgentContext.for_episode("t", 0))
    assert step.token_ids == [11, 12] and len(endpoint.requests) == 3


async def test_no_server_at_all_is_an_infrastructure_error(endpoint) -> None:
    endpoint.never.set()
    closed = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    with pytest.raises(EndpointError, match="expected an answer from"):
        await agent_for(closed).act(observation(), AgentContext.for_episode("t", 0))


async def test_a_garbage_reply_is_just_text_the_codec_rejects(endpoint) -> None:
    garbage = dict(REPLY, choices=[dict(REPLY["choices"][0], message={"role": "assistant",
                                                                       "content": "ĠĠ<|im_end|>??"})])
    endpoint.script = [(200, json.dumps(garbage))]
    agent = agent_for(endpoint.url)
    step = await agent.act(observation(), AgentContext.for_episode("t", 0))
    assert step.text == "ĠĠ<|im_end|>??"
    with pytest.raises(ActionParseError):
        agent.codec.decode(step.text, size=(160, 120))
