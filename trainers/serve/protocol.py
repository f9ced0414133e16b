"""The requests ``cua serve`` takes: OpenAI's chat completions and (text) completions.

Requests are validated by pydantic models that refuse unknown fields, so a client learns
which field the server does not support instead of having it ignored; ``tools`` and any
``response_format`` but ``text`` are refused with what is served instead. Images arrive as
data URLs (``data:image/png;base64,...``); the server fetches nothing. The replies are
built in ``responses`` from ``openai.types``.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.prompts import Message, Prompt
from trainers.models.inputs import open_image

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


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include_usage: bool = Field(default=False, description="a last chunk with the usage")


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str

    @field_validator("type")
    @classmethod
    def _text_only(cls, kind: str) -> str:
        if kind != "text":
            raise ValueError(f"expected {{'type': 'text'}}, the one format served (the model's own "
                             f"text, which the env's action codec parses), got {kind!r}; drop it")
        return kind


Stop = Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=16)]


class Sampling(BaseModel):
    """The fields both endpoints share; fields beyond these are refused by name."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="the served model's name (optional)")
    max_tokens: int | None = Field(default=None, ge=1, description="most completion tokens")
    temperature: float = Field(default=1.0, ge=0.0, le=10.0, description="0: greedy")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="nucleus sampling mass")
    n: int = Field(default=1, ge=1, le=64, description="completions per prompt")
    seed: int | None = Field(default=None, description="sampling seed (completion i uses seed + i)")
    stop: str | Stop | None = Field(default=None, description="stop strings: the text ends before "
                                    "the first one that appears")
    stream: bool = Field(default=False, description="answer as server-sent events")
    stream_options: StreamOptions | None = Field(default=None, description="include_usage")
    return_token_ids: bool = Field(default=False, description="return prompt and completion token ids")
    user: str | None = Field(default=None, description="ignored")

    @property
    def stops(self) -> tuple[str, ...]:
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


class ChatRequest(Sampling):
    """A ``POST /v1/chat/completions`` body."""

    messages: list[ChatMessage] = Field(min_length=1, description="the conversation")
    max_completion_tokens: int | None = Field(default=None, ge=1, description="same as max_tokens")
    logprobs: bool = Field(default=False, description="return each token's log-probability")
    top_logprobs: int | None = Field(default=None, ge=0, le=20, description="and the k likeliest tokens")
    response_format: ResponseFormat | None = Field(default=None, description="only {'type': 'text'}")
    tools: list[Any] | None = Field(default=None, description="refused: no tool calls")
    tool_choice: Any = Field(default=None, description="only 'none'")

    @field_validator("tools")
    @classmethod
    def _no_tools(cls, tools: list[Any] | None) -> None:
        if tools is not None:
            raise ValueError("expected no tools: cua serve answers with the model's text, and the "
                             "env's action codec (the prompt's action format) turns it into an "
                             "action; drop tools, or drive tools through TRL's environment_factory")
        return None

    @field_validator("tool_choice")
    @classmethod
    def _no_tool_choice(cls, choice: Any) -> Any:
        if choice not in (None, "none"):
            raise ValueError(f"expected 'none' (cua serve calls no tools), got {choice!r}; drop it")
        return choice

    @model_validator(mode="after")
    def _top_needs_logprobs(self) -> ChatRequest:
        if self.top_logprobs and not self.logprobs:
            raise ValueError("top_logprobs needs logprobs: true")
        return self


class CompletionRequest(Sampling):
    """A ``POST /v1/completions`` body: raw text in, no chat template."""

    prompt: Annotated[str, Field(min_length=1)] | Annotated[list[Annotated[str, Field(min_length=1)]],
                                                            Field(min_length=1)] = Field(
        description="the text to continue (or a list of them; token ids are not taken)")
    max_tokens: int | None = Field(default=16, ge=1, description="most completion tokens")
    logprobs: int | None = Field(default=None, ge=0, le=20, description="the k likeliest tokens' "
                                 "log-probabilities at each step (and the chosen one's)")
    echo: bool = Field(default=False, description="echoing the prompt is not supported")

    @field_validator("echo")
    @classmethod
    def _no_echo(cls, echo: bool) -> bool:
        if echo:
            raise ValueError("expected echo false: the reply holds the completion alone; drop echo")
        return echo

    @property
    def prompts(self) -> list[str]:
        return [self.prompt] if isinstance(self.prompt, str) else list(self.prompt)


#: what a client may send, named in the error for a field the server does not know
CHAT_FIELDS = ", ".join(ChatRequest.model_fields)
COMPLETION_FIELDS = ", ".join(CompletionRequest.model_fields)


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


def error_body(message: str, param: str | None = None, kind: str = "invalid_request_error",
               code: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
