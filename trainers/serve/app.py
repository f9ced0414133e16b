"""``cua serve``: a policy as an OpenAI-compatible endpoint (aiohttp).

    GET  /health                200 once serving (open: no API key needed), as vLLM has it
    GET  /v1/models             the served model (and its policy version)
    POST /v1/chat/completions   OpenAI's chat completions; images as data URLs; logprobs,
                                top_logprobs, n, seed, stop, stream; return_token_ids as vLLM
    POST /v1/completions        text completions: the prompt as is, no chat template
    POST /v1/weights            {"path": DIR[, "version": N]}: load DIR's weights into the
                                served model (same architecture and shapes), for online RL;
                                answers {"policy_version": N}

Concurrent requests share batched model calls (``Batcher`` over one ``Generator``, whose
lock also orders weight reloads between batches: a batch runs wholly on the old weights or
the new). Every reply says which ``policy_version`` produced it. A bad request gets a 4xx
with OpenAI's error shape, naming the field (``param``); the server never fetches URLs.
With ``api_key``, every ``/v1`` route wants ``Authorization: Bearer KEY`` (a 401 otherwise).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hmac
import json
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.agents.batching import Batcher
from harness.prompts import Prompt
from trainers.models.generation import Generation, GenerationRequest, Generator
from trainers.models.policy import Policy
from trainers.serve.protocol import (
    CHAT_FIELDS,
    COMPLETION_FIELDS,
    ChatRequest,
    CompletionRequest,
    RequestError,
    Sampling,
    error_body,
    to_prompt,
)
from trainers.serve.responses import (
    ChatChunks,
    TextChunks,
    TextDeltas,
    chat_completion,
    text_completion,
)


class WeightsRequest(BaseModel):
    """A ``POST /v1/weights`` body."""

    model_config = ConfigDict(extra="forbid")

    path: Path = Field(description="a checkpoint directory of the same architecture")
    version: int | None = Field(default=None, description="the new policy version; None: the old + 1")


class PolicyServer:
    """The handlers and state of one served policy."""

    def __init__(self, policy: Policy, *, name: str, max_batch: int = 8, max_wait_ms: float = 5.0,
                 max_new_tokens: int = 1024, policy_version: int = 0, api_key: str | None = None) -> None:
        self.policy = policy
        self.api_key = api_key
        self.name = name
        self.max_new_tokens = max_new_tokens
        self.policy_version = policy_version
        self.generator = Generator(policy)
        self.batcher: Batcher[GenerationRequest, Generation] = Batcher(
            self._generate_batch, max_batch=max_batch, max_wait_ms=max_wait_ms)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_json_errors, self._auth], client_max_size=64 * 1024 * 1024)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/weights", self.weights)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.api_key is not None and request.path.startswith("/v1"):
            given = request.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.api_key}".encode()):
                return web.json_response(error_body(
                    "expected the header 'Authorization: Bearer KEY' with the key `cua serve --api-key` "
                    f"was given, got {'a wrong key' if given else 'none'}", None, "authentication_error",
                    code="invalid_api_key"), status=401)
        return await handler(request)

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": self.name, "object": "model", "owned_by": "cua-harness",
             "policy_version": self.policy_version}]})

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = ChatRequest.model_validate(await _json(request))
        max_tokens = self._check(body, body.max_completion_tokens or body.max_tokens)
        prompt = to_prompt(body)
        requests = [GenerationRequest(prompt, max_new_tokens=max_tokens, temperature=body.temperature,
                                      top_p=body.top_p, seed=None if body.seed is None else body.seed + i,
                                      top_logprobs=body.top_logprobs or 0, stop=body.stops)
                    for i in range(body.n)]
        if body.stream:
            chunks = ChatChunks(body, model=self.name, tokenizer=self.policy.tokenizer,
                                policy_version=self.policy_version)
            return await self._stream(request, body, requests, chunks, live=not body.logprobs)
        generations, version = await self._generate(requests)
        return web.json_response(chat_completion(body, generations, model=self.name,
                                                 tokenizer=self.policy.tokenizer, policy_version=version))

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = CompletionRequest.model_validate(await _json(request))
        max_tokens = self._check(body, body.max_tokens)
        empty: Prompt[bytes] = Prompt([], [], [])
        requests = [GenerationRequest(empty, raw_prompt=text, max_new_tokens=max_tokens,
                                      temperature=body.temperature, top_p=body.top_p,
                                      seed=None if body.seed is None else body.seed + i,
                                      top_logprobs=body.logprobs or 0, stop=body.stops)
                    for text in body.prompts for i in range(body.n)]
        if body.stream:
            chunks = TextChunks(body, model=self.name, tokenizer=self.policy.tokenizer,
                                policy_version=self.policy_version)
            return await self._stream(request, body, requests, chunks, live=body.logprobs is None)
        generations, version = await self._generate(requests)
        return web.json_response(text_completion(body, generations, model=self.name,
                                                 tokenizer=self.policy.tokenizer, policy_version=version))

    def _check(self, body: Sampling, max_tokens: int | None) -> int:
        """The request's token budget, once its model and budget are ones served."""
        if body.model is not None and body.model != self.name:
            raise RequestError(f"expected model {self.name!r} (the one served), got {body.model!r}",
                               "model", status=404)
        max_tokens = max_tokens or min(256, self.max_new_tokens)
        if max_tokens > self.max_new_tokens:
            raise RequestError(f"expected max_tokens <= {self.max_new_tokens}, got {max_tokens}", "max_tokens")
        return max_tokens

    async def _generate(self, requests: list[GenerationRequest]) -> tuple[list[Generation], int]:
        version = self.policy_version
        generations = await asyncio.gather(*(self.batcher(r) for r in requests))
        return list(generations), version

    async def _stream(self, request: web.Request, body: Sampling, requests: list[GenerationRequest],
                      chunks: ChatChunks | TextChunks, *, live: bool) -> web.StreamResponse:
        """Server-sent events: each choice's text as its tokens come (``live``; else whole,
        once generated, with its log-probabilities), its finish, the usage, ``[DONE]``."""
        loop = asyncio.get_running_loop()
        tokens: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
        if live:
            requests = [dataclasses.replace(r, on_token=functools.partial(
                _put_from_thread, loop, tokens, i)) for i, r in enumerate(requests)]
        generating = asyncio.ensure_future(self._generate(requests))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        send = functools.partial(_send, response)
        for index in range(len(requests)):
            for event in chunks.start(index):
                await send(event)
        deltas = [TextDeltas(self.policy.tokenizer, r.stop) for r in requests]
        while not (generating.done() and tokens.empty()):
            next_token = asyncio.ensure_future(tokens.get())
            await asyncio.wait({next_token, generating}, return_when=asyncio.FIRST_COMPLETED)
            if not next_token.done():
                next_token.cancel()
                continue
            index, token = next_token.result()
            if delta := deltas[index].add(token):
                await send(chunks.text(index, delta))
        try:
            generations, _ = generating.result()
        except Exception as exc:  # the model failed mid-stream: OpenAI's error, as an event
            await send(error_body(f"{type(exc).__name__}: {exc}", None, "server_error"))
        else:
            for index, gen in enumerate(generations):
                rest = deltas[index].rest(gen.text) if live else gen.text
                if rest or not live:
                    await send(chunks.text(index, rest, None if live else gen))
                await send(chunks.finish(index, gen))
            if body.include_usage:
                await send(chunks.usage(generations))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def weights(self, request: web.Request) -> web.Response:
        body = WeightsRequest.model_validate(await _json(request))
        await asyncio.to_thread(self._reload, body.path)
        self.policy_version = body.version if body.version is not None else self.policy_version + 1
        return web.json_response({"policy_version": self.policy_version, "path": str(body.path)})

    async def _generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        return await asyncio.to_thread(self.generator.generate, requests)

    def _reload(self, path: Path) -> None:
        """Copy the weights of the checkpoint at ``path`` into the served model, between batches."""
        from transformers import AutoModelForImageTextToText

        if not (Path(path) / "config.json").is_file():
            raise RequestError(f"expected a checkpoint directory with config.json, got {str(path)!r}", "path")
        target = self.policy.model
        try:
            fresh = AutoModelForImageTextToText.from_pretrained(path, dtype=self.policy.dtype)
        except (OSError, ValueError) as exc:
            raise RequestError(f"expected loadable weights in {str(path)!r}, got: {exc}", "path") from exc
        state = fresh.state_dict()
        current = target.state_dict()
        wrong = sorted(k for k in current if k not in state or state[k].shape != current[k].shape)
        if wrong or len(state) != len(current):
            raise RequestError(f"expected the served architecture's weights in {str(path)!r}, got "
                               f"different names or shapes ({', '.join(wrong[:3]) or 'extra tensors'})",
                               "path", status=409)
        with self.generator.lock:
            target.load_state_dict(state)


def _put_from_thread(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[tuple[int, int]],
                     index: int, token: int) -> None:
    """``on_token`` for choice ``index``: the generating thread hands its token to the loop."""
    loop.call_soon_threadsafe(queue.put_nowait, (index, token))


async def _send(response: web.StreamResponse, event: dict[str, Any]) -> None:
    await response.write(f"data: {json.dumps(event)}\n\n".encode())


async def _json(request: web.Request) -> Any:
    try:
        return await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(f"expected a JSON body, got one that does not parse: {exc}") from exc


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every failure as OpenAI's JSON error: 4xx for the client's mistakes, naming the field."""
    try:
        return await handler(request)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        fields = COMPLETION_FIELDS if request.path.endswith("/v1/completions") else CHAT_FIELDS
        problems = "; ".join(_problem(e, fields) for e in err.errors(include_url=False)[:5])
        return web.json_response(error_body(problems, param), status=400)
    except RequestError as exc:
        kind = "not_found_error" if exc.status == 404 else "invalid_request_error"
        return web.json_response(error_body(str(exc), exc.param, kind), status=exc.status)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return web.json_response(error_body(f"{exc.reason}: {request.method} {request.path}", None),
                                 status=exc.status)
    except Exception as exc:  # the model failed: say so, and keep serving
        return web.json_response(error_body(f"{type(exc).__name__}: {exc}", None, "server_error"), status=500)


def _problem(error: Any, fields: str) -> str:
    """One validation error in words; a field the server does not know gets the ones it does."""
    where = ".".join(str(p) for p in error["loc"]) or "body"
    if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
        return f"{where}: not supported by cua serve; expected only these fields: {fields}"
    if error["type"] == "value_error":
        return f"{where}: {error['ctx']['error']}"
    return f"{where}: {error['msg']}"
