"""``openai:URL[#MODEL]``: any OpenAI-compatible chat completions endpoint.

    cua eval --suite fsm:shop --agent 'openai:http://127.0.0.1:8000/v1#tiny?codec=json'

Works with ``cua serve``, ``vllm serve`` or a hosted model. The prompt builder's messages go
out with each screenshot as a data URL (``{"type": "image_url", "image_url": {"url":
"data:image/png;base64,..."}}``); the request asks for log-probabilities and, where the
server has them (vLLM, ``cua serve``: ``return_token_ids``), token ids, and the step records
what came back. ``OPENAI_API_KEY``, when set, is sent as the bearer token. Needs no torch.

The requests go through the official ``openai`` SDK: one ``AsyncOpenAI`` client per agent
(per event loop: its connections belong to one), with the SDK's own ``timeout`` and
``max_retries`` (``timeout_s`` and ``retries``; it backs off exponentially and honours
``Retry-After``). Failures: no connection, a timeout, a 5xx/408/409/429 status (after the
retries) or a body that is not a chat completion raise ``EndpointError`` (infrastructure:
the runner retries the episode); another 4xx raises ``EndpointRejected`` with the server's
message (the episode fails as the agent's). A reply that is not an action is just text: the
env's codec rejects it and the episode goes on.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import copy
import json
import os
from typing import Any

import openai

from harness.agents.base import AgentContext, AgentStep
from harness.agents.model import Completion, ModelAgent
from harness.observation import Observation
from harness.prompts import Prompt
from trainers.agents.options import OpenAIAgentOptions, parse_options, split_spec
from trainers.errors import ConfigError, EndpointError, EndpointRejected

#: The step being decided: its sampling seed (set by ``act``) and what the server reported
#: (set by ``generate``).
_REPLY: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("openai_reply", default=None)


def image_url(data: bytes) -> str:
    """An encoded screenshot as a data URL (PNG, JPEG, WebP or GIF by its magic bytes)."""
    kind = ("png" if data.startswith(b"\x89PNG") else "jpeg" if data.startswith(b"\xff\xd8")
            else "webp" if data[8:12] == b"WEBP" else "gif" if data.startswith(b"GIF8") else "png")
    return f"data:image/{kind};base64,{base64.b64encode(data).decode('ascii')}"


def openai_messages(prompt: Prompt[bytes]) -> list[dict[str, Any]]:
    """The prompt's messages with every image part carrying its screenshot as a data URL."""
    images = iter(prompt.images)
    messages = []
    for message in prompt.messages:
        content = message["content"]
        if isinstance(content, list):
            content = [{"type": "image_url", "image_url": {"url": image_url(next(images))}}
                       if part.get("type") == "image" else part for part in content]
        messages.append({"role": message["role"], "content": content})
    return messages


class OpenAIAgent(ModelAgent):
    """A ``ModelAgent`` over an OpenAI-compatible endpoint (see the module docstring)."""

    name = "openai"

    def __init__(self, base_url: str, options: OpenAIAgentOptions | None = None) -> None:
        self.options = options or OpenAIAgentOptions()
        super().__init__(self.options.prompt_config(), policy_version=self.options.policy_version)
        self.base_url = base_url.rstrip("/")
        self.model = self.options.model
        #: (event loop, client): one slot shared with the agent's ``sampling`` copies
        self._client: list[tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI]] = []

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        seed = (ctx.rng.getrandbits(62) + self.options.seed * 1_000_003) % (1 << 62)
        reply: dict[str, Any] = {"seed": seed}
        token = _REPLY.set(reply)
        try:
            step = await super().act(obs, ctx)
        finally:
            _REPLY.reset(token)
        version = reply.get("policy_version")
        return step if not isinstance(version, int) else step.model_copy(update={"policy_version": version})

    def sampling(self, temperature: float) -> OpenAIAgent:
        """This agent at ``temperature`` (the same endpoint and served model)."""
        agent = copy.copy(self)
        agent.options = self.options.model_copy(update={"temperature": temperature})
        return agent

    async def generate(self, prompt: Prompt[bytes]) -> Completion:
        model = self.model or await self._first_model()
        options = self.options
        body: dict[str, Any] = {
            "model": model, "messages": openai_messages(prompt), "max_tokens": options.max_new_tokens,
            "temperature": options.temperature, "top_p": options.top_p}
        reply = _REPLY.get()
        if reply is not None:
            body["seed"] = reply["seed"]
        if options.logprobs:
            body["logprobs"] = True
        if options.token_ids:
            body["return_token_ids"] = True
        data = await self._request("POST", "/chat/completions", body)
        completion, version = parse_completion(data, self.base_url)
        if reply is not None and version is not None:
            reply["policy_version"] = version
        return completion

    async def _first_model(self) -> str:
        data = await self._request("GET", "/models", None)
        try:
            self.model = str(data["data"][0]["id"])
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"openai agent: expected a model list from {self.base_url}/models, got "
                                f"{json.dumps(data)[:200]}; name the model: openai:URL#MODEL") from None
        return self.model

    def client(self) -> openai.AsyncOpenAI:
        """The agent's SDK client (a new one only when the event loop is a new one)."""
        loop = asyncio.get_running_loop()
        if not self._client or self._client[0][0] is not loop:
            client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=os.environ.get("OPENAI_API_KEY") or "none",
                timeout=self.options.timeout_s, max_retries=self.options.retries)
            self._client[:] = [(loop, client)]
        return self._client[0][1]

    async def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        url = self.base_url + path
        client = self.client()
        try:
            if body is None:
                raw = await client.models.with_raw_response.list()
            else:
                known = {k: v for k, v in body.items() if k != "return_token_ids"}
                extra = {"return_token_ids": True} if body.get("return_token_ids") else None
                raw = await client.chat.completions.with_raw_response.create(**known, extra_body=extra)
            return _json_body(url, raw.text)
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409, 429):
                raise EndpointError(f"openai agent: expected a 200 from {url}, got {exc.status_code}: "
                                    f"{exc.response.text[:300]}") from exc
            raise EndpointRejected(f"openai agent: {url} refused the request with {exc.status_code}: "
                                   f"{exc.response.text[:500]}") from exc
        except openai.APIConnectionError as exc:  # a timeout too
            timed_out = isinstance(exc, openai.APITimeoutError)
            raise EndpointError(f"openai agent: expected an answer from {url}, got "
                                f"{'no reply in time' if timed_out else f'{exc}: {exc.__cause__}'}; check "
                                "that the server runs and answers within timeout_s") from exc


def _json_body(url: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise EndpointError(f"openai agent: expected JSON from {url}, got {text[:200]!r}") from None


def parse_completion(data: Any, where: str) -> tuple[Completion, int | None]:
    """A chat completion body as a ``Completion`` (with token ids and log-probabilities where
    it has them) and the policy version it reports (``cua serve``), if any."""
    try:
        choice = data["choices"][0]
        content = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise EndpointError(f"openai agent: expected a chat completion from {where}, got "
                            f"{json.dumps(data)[:300]}") from None
    if not isinstance(content, str):
        raise EndpointError(f"openai agent: expected message content as text from {where}, got "
                            f"{type(content).__name__}")
    entries = ((choice.get("logprobs") or {}).get("content") or [])
    logprobs = [float(e["logprob"]) for e in entries if isinstance(e, dict) and "logprob" in e] or None
    token_ids = choice.get("token_ids") or _ids_from_tokens(entries)
    if token_ids is not None and logprobs is not None and len(token_ids) != len(logprobs):
        token_ids = None  # a server that counts differently: keep the log-probabilities alone
    prompt_ids = data.get("prompt_token_ids") or choice.get("prompt_token_ids")
    version = data.get("policy_version")
    return Completion(text=content, token_ids=list(token_ids) if token_ids else None,
                      logprobs=logprobs, prompt_token_ids=list(prompt_ids) if prompt_ids else None), \
        version if isinstance(version, int) else None


def _ids_from_tokens(entries: list[Any]) -> list[int] | None:
    """vLLM's ``return_tokens_as_token_ids`` writes tokens as ``token_id:123``."""
    ids = []
    for entry in entries:
        token = entry.get("token", "") if isinstance(entry, dict) else ""
        if not token.startswith("token_id:"):
            return None
        ids.append(int(token.removeprefix("token_id:")))
    return ids or None


def make(arg: str | None) -> OpenAIAgent:
    """The registry's factory: ``openai:URL[#MODEL][?option=value&...]``."""
    target, model, query = split_spec("openai", arg)
    if not target.startswith(("http://", "https://")):
        raise ConfigError(f"openai agent: expected an http(s) URL of the API root, got {target!r}; "
                          "e.g. openai:http://127.0.0.1:8000/v1")
    options = parse_options(OpenAIAgentOptions, "openai", {"model": model} if model else {}, query)
    return OpenAIAgent(target, options)
