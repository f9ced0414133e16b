"""cua serve: an OpenAI-compatible endpoint over a real policy and real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import openai
import pytest
import pytest_asyncio
from aiohttp import web

from harness.agents.base import AgentContext
from tests.harness.store.helpers import screenshot
from tests.trainers.test_hf_agent import observation
from trainers.agents.hf import HFAgent
from trainers.agents.openai_agent import OpenAIAgent, image_url
from trainers.agents.options import HFAgentOptions, OpenAIAgentOptions
from trainers.models.checkpoint import ModelInitConfig, init_checkpoint
from trainers.models.generation import GenerationRequest, Generator
from trainers.models.policy import PolicyConfig, load_policy
from trainers.serve.app import PolicyServer
from trainers.serve.protocol import ChatRequest, to_prompt

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def served(tiny_dir) -> AsyncIterator[tuple[PolicyServer, str]]:
    # its own policy: /v1/weights replaces weights in place
    server = PolicyServer(load_policy(PolicyConfig(path=tiny_dir, device="cpu")), name="tiny",
                          max_batch=4, max_wait_ms=200, max_new_tokens=32)
    runner = web.AppRunner(server.app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield server, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    await runner.cleanup()


async def post(url: str, body: object) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
        return response.status, await response.json()


def chat(**fields: object) -> dict:
    content = [{"type": "image_url", "image_url": {"url": image_url(screenshot("home"))}},
               {"type": "text", "text": "Click Submit."}]
    return {"model": "tiny", "messages": [{"role": "user", "content": content}], "max_tokens": 5, **fields}


async def test_the_openai_agent_through_the_server_matches_the_hf_agent(served, tiny_policy) -> None:
    server, url = served
    options = dict(codec="json", max_new_tokens=6)
    remote = await OpenAIAgent(url, OpenAIAgentOptions(model="tiny", **options)).act(
        observation("home"), AgentContext.for_episode("t", 0))
    local = await HFAgent(tiny_policy, HFAgentOptions(**options)).act(
        observation("home"), AgentContext.for_episode("t", 0))
    assert remote.text == local.text and remote.token_ids == local.token_ids
    assert remote.prompt_token_ids == local.prompt_token_ids
    assert max(abs(a - b) for a, b in zip(remote.logprobs, local.logprobs, strict=True)) < 1e-5
    assert remote.policy_version == 0
    async with aiohttp.ClientSession() as session, session.get(f"{url}/models") as response:
        assert (await response.json())["data"][0]["id"] == "tiny"


async def test_samples_top_logprobs_and_batches_concurrent_requests(served) -> None:
    server, url = served
    calls = server.generator.calls
    body = chat(n=2, seed=3, temperature=1.0, logprobs=True, top_logprobs=3, return_token_ids=True)
    replies = await asyncio.gather(*(post(f"{url}/chat/completions", body) for _ in range(2)))
    assert server.generator.calls == calls + 1  # 2 requests x n=2 = one batch of 4
    (status, first), (_, second) = replies
    assert status == 200
    for a, b in zip(first["choices"], second["choices"], strict=True):  # same seed, same samples
        assert a["token_ids"] == b["token_ids"] and a["message"] == b["message"]
        # rows of one batch may differ in the last float bits (CPU matmul blocking)
        gaps = [abs(x["logprob"] - y["logprob"]) for x, y in
                zip(a["logprobs"]["content"], b["logprobs"]["content"], strict=True)]
        assert max(gaps) < 1e-5
    one, two = first["choices"]
    assert one["token_ids"] != two["token_ids"]  # seed 3 and seed 4
    entry = one["logprobs"]["content"][0]
    assert len(entry["top_logprobs"]) == 3 and entry["top_logprobs"][0]["logprob"] >= entry["logprob"]
    assert first["usage"]["completion_tokens"] == 10 and len(first["prompt_token_ids"]) > 10


@pytest.mark.parametrize("body, status, param", [
    (chat(tools=[{"type": "function", "function": {"name": "click"}}]), 400, "tools"),
    (chat(response_format={"type": "json_object"}), 400, "response_format.type"),
    (chat(stop=[""]), 400, "stop.str"),
    (chat(model="gpt-4o"), 404, "model"),
    (chat(max_tokens=999), 400, "max_tokens"),
    (chat(top_logprobs=2), 400, None),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}]},
     400, "messages.0.content.0.image_url.url"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]},
     400, "messages.0.content.0.image_url.url"),
])
async def test_bad_requests_get_a_4xx_naming_the_field(served, body, status, param) -> None:
    _, url = served
    got, reply = await post(f"{url}/chat/completions", body)
    assert got == status and reply["error"]["message"]
    assert reply["error"]["param"] == param


async def test_refusals_name_what_is_served(served) -> None:
    _, url = served
    _, tools = await post(f"{url}/chat/completions", chat(tools=[{"type": "function"}]))
    assert "expected no tools" in tools["error"]["message"] and "action codec" in tools["error"]["message"]
    _, schema = await post(f"{url}/chat/completions", chat(response_format={"type": "json_schema"}))
    assert "expected {'type': 'text'}" in schema["error"]["message"]
    _, forced = await post(f"{url}/chat/completions", chat(tool_choice="required"))
    assert "tool_choice: expected 'none' (cua serve calls no tools), got 'required'" in forced["error"]["message"]
    _, echo = await post(f"{url}/completions", {"prompt": "Click", "echo": True})
    assert echo["error"]["param"] == "echo" and "expected echo false" in echo["error"]["message"]
    _, unknown = await post(f"{url}/chat/completions", chat(frequency_penalty=0.5))
    message = unknown["error"]["message"]
    assert "frequency_penalty: not supported" in message and "stop, stream" in message


async def test_the_official_client_stops_streams_and_completes(served) -> None:
    server, url = served
    client = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0)
    body = chat(temperature=0, max_tokens=8, logprobs=True)
    full = await client.chat.completions.create(**body)
    text = full.choices[0].message.content
    assert full.choices[0].finish_reason == "length" and len(text) > 2
    stop = text[2:4]  # a stop string the greedy text holds: it ends just before it
    cut = await client.chat.completions.create(**{**body, "stop": [stop, "never-there"]})
    [choice] = cut.choices
    assert choice.message.content == text[: text.index(stop)] and choice.finish_reason == "stop"
    assert len(choice.logprobs.content) < 8 and choice.logprobs.content == \
        full.choices[0].logprobs.content[: len(choice.logprobs.content)]

    stream = await client.chat.completions.create(**{**body, "logprobs": False}, stream=True,
                                                  stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == text and len(pieces) > 1  # as the tokens came
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 8
    stopped = [c async for c in await client.chat.completions.create(**body, stop=stop, stream=True)]
    assert "".join(c.choices[0].delta.content or "" for c in stopped) == choice.message.content
    assert stopped[-1].choices[0].finish_reason == "stop"
    whole = [c async for c in await client.chat.completions.create(**body, stream=True)]  # with logprobs
    [with_logprobs] = [c.choices[0] for c in whole if c.choices[0].logprobs]
    assert with_logprobs.delta.content == text and with_logprobs.logprobs.content == full.choices[0].logprobs.content

    raw = await client.completions.create(model="tiny", prompt=["Click", "Submit the"], max_tokens=4,
                                          temperature=0, n=2, logprobs=2)
    assert [c.index for c in raw.choices] == [0, 1, 2, 3] and raw.object == "text_completion"
    assert raw.choices[0].text == raw.choices[1].text != raw.choices[2].text  # greedy, per prompt
    assert len(raw.choices[0].logprobs.token_logprobs) == 4 and raw.usage.completion_tokens == 16
    streamed = [c async for c in await client.completions.create(
        model="tiny", prompt="Click", max_tokens=4, temperature=0, stream=True)]
    assert "".join(c.choices[0].text for c in streamed) == raw.choices[0].text
    await client.close()


async def test_health_is_open_and_the_api_key_guards_the_api(served) -> None:
    server, url = served
    root = url.removesuffix("/v1")
    server.api_key = "sk-serve"
    try:
        async with aiohttp.ClientSession() as session, session.get(f"{root}/health") as response:
            assert response.status == 200
        with pytest.raises(openai.AuthenticationError, match="Authorization: Bearer"):
            await openai.AsyncOpenAI(base_url=url, api_key="sk-wrong", max_retries=0).models.list()
        models = await openai.AsyncOpenAI(base_url=url, api_key="sk-serve", max_retries=0).models.list()
        assert models.data[0].id == "tiny"
    finally:
        server.api_key = None


async def test_a_body_that_is_not_json_is_a_400(served) -> None:
    _, url = served
    async with aiohttp.ClientSession() as session, session.post(f"{url}/chat/completions", data=b"{") as r:
        assert r.status == 400 and "expected a JSON body" in (await r.json())["error"]["message"]


async def test_weights_reload_between_batches_and_bump_the_version(served, tmp_path) -> None:
    server, url = served
    greedy = chat(logprobs=True, temperature=0)
    _, before = await post(f"{url}/chat/completions", greedy)
    other = init_checkpoint(ModelInitConfig(out=tmp_path / "seed1", seed=1)).path
    status, answer = await post(f"{url}/weights", {"path": str(other)})
    assert status == 200 and answer["policy_version"] == 1
    _, after = await post(f"{url}/chat/completions", greedy)
    assert after["policy_version"] == 1 and after["choices"] != before["choices"]
    request = GenerationRequest(to_prompt(ChatRequest.model_validate(greedy)), max_new_tokens=5)
    [expected] = Generator(load_policy(PolicyConfig(path=other, device="cpu"))).generate([request])
    assert after["choices"][0]["message"]["content"] == expected.text  # the new weights answer
    got = [e["logprob"] for e in after["choices"][0]["logprobs"]["content"]]
    assert got == pytest.approx(expected.logprobs, abs=1e-5)
    small = init_checkpoint(ModelInitConfig(out=tmp_path / "small", preset="small")).path
    status, refused = await post(f"{url}/weights", {"path": str(small)})
    assert status == 409 and refused["error"]["param"] == "path"
    status, missing = await post(f"{url}/weights", {"path": str(tmp_path / "none")})
    assert status == 400 and missing["error"]["param"] == "path" and server.policy_version == 1
