"""The OpenAI chat-completions wire format ``cua serve`` speaks: requests in, bodies out.

Requests are validated by pydantic models that refuse unknown fields, so a client learns
which field the server does not support instead of having it ignored. Images arrive as
data URLs (``data:image/png;base64,...``); the server fetches nothing. Replies carry
OpenAI's fields (``choices[].message``, ``finish_reason``, ``logprobs.content[]`` with
``top_logprobs``, ``usage``) plus, when asked with ``return_token_ids`` (as vLLM does),
``prompt_token_ids`` and ``choices[].token_ids``, and always ``policy_version``.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
import uuid
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.prompts import Message, Prompt
from trainers.models.generation import Generation

DATA_URL = re.compile(r"^data:image/[a-zA-Z0-9.+-]+;base64,(?P<data>.*)$", re.DOTALL)


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["text"]
    text: str


class ImageURL(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="a data:image/...;base64,... URL")
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["image_url"]
    image_url: ImageURL


Part = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str | list[Part]
    name: str | None = None


class ChatRequest(BaseModel):
    """A ``POST /v1/chat/completions`` body; fields beyond these are refused by name."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="the served model's name (optional)")
    messages: list[ChatMessage] = Field(min_length=1, description="the conversation")
    max_tokens: int | None = Field(default=None, ge=1, description="most completion tokens")
    max_completion_tokens: int | None = Field(default=None, ge=1, description="same as max_tokens")
    temperature: float = Field(default=1.0, ge=0.0, le=10.0, description="0: greedy")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="nucleus sampling mass")
    n: int = Field(default=1, ge=1, le=64, description="completions per request")
    seed: int | None = Field(default=None, description="sampling seed (completion i uses seed + i)")
    logprobs: bool = Field(default=False, description="return each token's log-probability")
    top_logprobs: int | None = Field(default=None, ge=0, le=20, description="and the k likeliest tokens")
    return_token_ids: bool = Field(default=False, description="return prompt and completion token ids")
    stream: Literal[False] = Field(default=False, description="streaming is not supported")
    stop: None = Field(default=None, description="stop strings are not supported")
    user: str | None = Field(default=None, description="ignored")

    @model_validator(mode="after")
    def _top_needs_logprobs(self) -> ChatRequest:
        if self.top_logprobs and not self.logprobs:
            raise ValueError("top_logprobs needs logprobs: true")
        return self


class RequestError(ValueError):
    """A request the server refuses: the field (``param``) and why."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.param = param
        self.status = status


def to_prompt(request: ChatRequest) -> Prompt[bytes]:
    """The request's messages as a ``Prompt``: image parts become ``{"type": "image"}`` with
    their decoded bytes in ``images``, in order."""
    messages: list[Message] = []
    images: list[bytes] = []
    for i, message in enumerate(request.messages):
        if isinstance(message.content, str):
            messages.append({"role": message.role, "content": message.content})
            continue
        content: list[dict[str, Any]] = []
        for j, part in enumerate(message.content):
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            else:
                images.append(decode_data_url(part.image_url.url, f"messages.{i}.content.{j}.image_url.url"))
                content.append({"type": "image"})
        messages.append({"role": message.role, "content": content})
    return Prompt(messages, images, list(range(len(images))))


def decode_data_url(url: str, param: str) -> bytes:
    """The image bytes of a base64 data URL, checked to be an image PIL can read."""
    from trainers.models.inputs import open_image

    match = DATA_URL.match(url)
    if match is None:
        raise RequestError(f"expected a data:image/...;base64,... URL, got {url[:40]!r}; the server "
                           "fetches nothing, so send the image inline", param)
    try:
        data = base64.b64decode(match.group("data"), validate=True)
        image = open_image(data)
    except (binascii.Error, ValueError) as exc:
        raise RequestError(f"expected a base64-encoded PNG or JPEG, got data that is not one: {exc}",
                           param) from exc
    width, height = image.size
    if max(width, height) > 200 * min(width, height):
        raise RequestError(f"expected an image with an aspect ratio under 200, got {width}x{height}", param)
    return data


@cache
def _byte_decoder() -> dict[str, int]:
    """Byte-level BPE's character -> byte map (GPT-2's printable stand-ins for bytes)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def token_bytes(tokenizer: Any, token_id: int) -> bytes:
    """The bytes a token stands for (special tokens: their text)."""
    token = tokenizer.convert_ids_to_tokens(int(token_id))
    decoder = _byte_decoder()
    if token is None:
        return b""
    if token in tokenizer.all_special_tokens or any(ch not in decoder for ch in token):
        return token.encode("utf-8")
    return bytes(decoder[ch] for ch in token)


def _logprob_entry(tokenizer: Any, token_id: int, logprob: float) -> dict[str, Any]:
    raw = token_bytes(tokenizer, token_id)
    return {"token": raw.decode("utf-8", errors="replace"), "logprob": logprob, "bytes": list(raw)}


def completion_body(request: ChatRequest, generations: list[Generation], *, model: str,
                    tokenizer: Any, policy_version: int) -> dict[str, Any]:
    """The response body for ``request`` from its ``n`` generations."""
    choices = []
    for index, gen in enumerate(generations):
        choice: dict[str, Any] = {"index": index, "finish_reason": gen.finish_reason,
                                  "message": {"role": "assistant", "content": gen.text}, "logprobs": None}
        if request.logprobs:
            content = []
            for k, (token, logprob) in enumerate(zip(gen.token_ids, gen.logprobs, strict=True)):
                entry = _logprob_entry(tokenizer, token, logprob)
                entry["top_logprobs"] = [_logprob_entry(tokenizer, t, lp) for t, lp in
                                         (gen.top_logprobs[k] if gen.top_logprobs else [])]
                content.append(entry)
            choice["logprobs"] = {"content": content}
        if request.return_token_ids:
            choice["token_ids"] = gen.token_ids
        choices.append(choice)
    prompt_tokens = len(generations[0].prompt_token_ids)
    completion_tokens = sum(len(g.token_ids) for g in generations)
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": model, "choices": choices, "policy_version": policy_version,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}}
    if request.return_token_ids:
        body["prompt_token_ids"] = generations[0].prompt_token_ids
    return body


def error_body(message: str, param: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
    """OpenAI's error shape."""
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}
