"""The replies ``cua serve`` sends, built from ``openai.types`` (so they are what the official
client parses): chat completions and their stream chunks, text completions and theirs.

Beyond OpenAI's fields, every reply carries ``policy_version`` and, when asked with
``return_token_ids`` (as vLLM has it), ``prompt_token_ids`` and ``choices[].token_ids``.
A stream (``ChatChunks``, ``TextChunks``) sends each choice's text as its tokens are
generated (``TextDeltas``: never a part that a stop string may still claim, never half a
character); asked for log-probabilities, it sends each choice's whole text with them once
it is complete. Then each choice's ``finish_reason``, the usage when
``stream_options.include_usage`` asks for it, and ``[DONE]``.
"""

from __future__ import annotations

import time
import uuid
from functools import cache
from typing import Any

from openai.types import Completion, CompletionChoice, CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionTokenLogprob
from openai.types.chat.chat_completion import Choice, ChoiceLogprobs
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import ChoiceDelta
from openai.types.chat.chat_completion_chunk import ChoiceLogprobs as ChunkLogprobs
from openai.types.chat.chat_completion_message import ChatCompletionMessage
from openai.types.chat.chat_completion_token_logprob import TopLogprob
from openai.types.completion_choice import Logprobs

from trainers.models.generation import Generation, first_stop
from trainers.serve.protocol import ChatRequest, CompletionRequest


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


def _token(tokenizer: Any, token_id: int) -> tuple[str, list[int]]:
    raw = token_bytes(tokenizer, token_id)
    return raw.decode("utf-8", errors="replace"), list(raw)


def _chat_logprobs(tokenizer: Any, gen: Generation) -> list[ChatCompletionTokenLogprob]:
    content = []
    for k, (token_id, logprob) in enumerate(zip(gen.token_ids, gen.logprobs, strict=True)):
        token, raw = _token(tokenizer, token_id)
        tops = [TopLogprob(token=t, bytes=b, logprob=lp) for t, b, lp in
                ((*_token(tokenizer, i), lp) for i, lp in (gen.top_logprobs[k] if gen.top_logprobs else []))]
        content.append(ChatCompletionTokenLogprob(token=token, bytes=raw, logprob=logprob, top_logprobs=tops))
    return content


def _usage(generations: list[Generation], prompts: int) -> CompletionUsage:
    """Each prompt's tokens once (its n completions share it) and every completion's."""
    per_prompt = len(generations) // max(prompts, 1)
    prompt_tokens = sum(len(g.prompt_token_ids) for g in generations[::per_prompt])
    completion_tokens = sum(len(g.token_ids) for g in generations)
    return CompletionUsage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                           total_tokens=prompt_tokens + completion_tokens)


def _ids(request: ChatRequest | CompletionRequest, gen: Generation) -> dict[str, Any]:
    return {"token_ids": gen.token_ids} if request.return_token_ids else {}


def _version(policy_version: int) -> dict[str, Any]:
    return {"policy_version": policy_version}


def _dump(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json", exclude_unset=True))


def chat_completion(request: ChatRequest, generations: list[Generation], *, model: str,
                    tokenizer: Any, policy_version: int) -> dict[str, Any]:
    """The ``chat.completion`` body for ``request`` from its ``n`` generations."""
    choices = [Choice(index=i, finish_reason=gen.finish_reason, **_ids(request, gen),
                      message=ChatCompletionMessage(role="assistant", content=gen.text),
                      logprobs=ChoiceLogprobs(content=_chat_logprobs(tokenizer, gen)) if request.logprobs else None)
               for i, gen in enumerate(generations)]
    extra: dict[str, Any] = {"policy_version": policy_version}
    if request.return_token_ids:
        extra["prompt_token_ids"] = generations[0].prompt_token_ids
    return _dump(ChatCompletion(
        id=f"chatcmpl-{uuid.uuid4().hex}", object="chat.completion", created=int(time.time()), model=model,
        choices=choices, usage=_usage(generations, 1), **extra))


class ChatChunks:
    """The ``chat.completion.chunk`` events of one streamed reply: per choice its role
    (``start``), its text as it comes (``text``), its ``finish_reason`` (``finish``); then
    the ``usage`` when ``stream_options.include_usage`` asks."""

    def __init__(self, request: ChatRequest, *, model: str, tokenizer: Any, policy_version: int) -> None:
        self.request, self.tokenizer = request, tokenizer
        self.head: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model, **_version(policy_version)}

    def _chunk(self, choices: list[ChunkChoice], **more: Any) -> dict[str, Any]:
        return _dump(ChatCompletionChunk(**self.head, choices=choices, **more))

    def start(self, index: int) -> list[dict[str, Any]]:
        return [self._chunk([ChunkChoice(index=index, delta=ChoiceDelta(role="assistant", content=""),
                                         finish_reason=None, logprobs=None)])]

    def text(self, index: int, text: str, gen: Generation | None = None) -> dict[str, Any]:
        """A piece of choice ``index``'s text; with ``gen``, the whole of it with its
        log-probabilities and token ids (a stream that waited for them)."""
        logprobs = ChunkLogprobs(content=_chat_logprobs(self.tokenizer, gen)) \
            if gen is not None and self.request.logprobs else None
        ids = _ids(self.request, gen) if gen is not None else {}
        return self._chunk([ChunkChoice(index=index, delta=ChoiceDelta(content=text), finish_reason=None,
                                        logprobs=logprobs, **ids)])

    def finish(self, index: int, gen: Generation) -> dict[str, Any]:
        return self._chunk([ChunkChoice(index=index, delta=ChoiceDelta(), finish_reason=gen.finish_reason,
                                        logprobs=None)])

    def usage(self, generations: list[Generation]) -> dict[str, Any]:
        more = {"prompt_token_ids": generations[0].prompt_token_ids} if self.request.return_token_ids else {}
        return self._chunk([], usage=_usage(generations, 1), **more)


def _text_logprobs(tokenizer: Any, gen: Generation) -> Logprobs:
    tokens = [_token(tokenizer, t)[0] for t in gen.token_ids]
    offsets = [sum(len(t) for t in tokens[:k]) for k in range(len(tokens))]
    tops = [{_token(tokenizer, i)[0]: lp for i, lp in step} for step in gen.top_logprobs or []]
    return Logprobs(tokens=tokens, token_logprobs=list(gen.logprobs), text_offset=offsets,
                    top_logprobs=tops or None)


def _text_choices(request: CompletionRequest, generations: list[Generation], tokenizer: Any
                  ) -> list[CompletionChoice]:
    return [CompletionChoice(index=i, text=gen.text, finish_reason=gen.finish_reason, **_ids(request, gen),
                             logprobs=_text_logprobs(tokenizer, gen) if request.logprobs is not None else None)
            for i, gen in enumerate(generations)]


def text_completion(request: CompletionRequest, generations: list[Generation], *, model: str,
                    tokenizer: Any, policy_version: int) -> dict[str, Any]:
    """The ``text_completion`` body: choice ``p * n + j`` is prompt p's completion j."""
    return _dump(Completion(
        id=f"cmpl-{uuid.uuid4().hex}", object="text_completion", created=int(time.time()), model=model,
        choices=_text_choices(request, generations, tokenizer),
        usage=_usage(generations, len(request.prompts)), **_version(policy_version)))


class TextChunks:
    """A streamed ``text_completion``: the same steps as ``ChatChunks`` (no role chunk);
    choice ``p * n + j`` is prompt p's completion j."""

    def __init__(self, request: CompletionRequest, *, model: str, tokenizer: Any, policy_version: int) -> None:
        self.request, self.tokenizer = request, tokenizer
        self.head: dict[str, Any] = {
            "id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
            "model": model, **_version(policy_version)}

    def _chunk(self, choices: list[CompletionChoice], **more: Any) -> dict[str, Any]:
        return _dump(Completion(**self.head, choices=choices, **more))

    def start(self, index: int) -> list[dict[str, Any]]:
        return []

    def text(self, index: int, text: str, gen: Generation | None = None) -> dict[str, Any]:
        logprobs = _text_logprobs(self.tokenizer, gen) if gen is not None and self.request.logprobs is not None \
            else None
        ids = _ids(self.request, gen) if gen is not None else {}
        # finish_reason is null until the last chunk, which OpenAI's type does not allow: not validated
        return self._chunk([CompletionChoice.model_construct(index=index, text=text, finish_reason=None,  # type: ignore[arg-type]
                                                             logprobs=logprobs, **ids)])

    def finish(self, index: int, gen: Generation) -> dict[str, Any]:
        return self._chunk([CompletionChoice(index=index, text="", finish_reason=gen.finish_reason)])

    def usage(self, generations: list[Generation]) -> dict[str, Any]:
        return self._chunk([], usage=_usage(generations, len(self.request.prompts)))


class TextDeltas:
    """One completion's text as its tokens arrive: each ``add`` returns what may be sent now."""

    def __init__(self, tokenizer: Any, stops: tuple[str, ...]) -> None:
        self.tokenizer, self.stops = tokenizer, stops
        self.hold = max((len(s) for s in stops), default=1) - 1  # what a stop string may still claim
        self.ids: list[int] = []
        self.sent = ""
        self.stopped = False

    def add(self, token: int) -> str:
        self.ids.append(token)
        if self.stopped:
            return ""
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        at = first_stop(text, self.stops)
        if at is not None:
            self.stopped, safe = True, text[:at]
        else:
            safe = text[: len(text) - self.hold] if self.hold else text
        safe = safe.rstrip("\ufffd")  # a character whose bytes have not all come
        if len(safe) <= len(self.sent) or not safe.startswith(self.sent):
            return ""
        delta, self.sent = safe[len(self.sent):], safe
        return delta

    def rest(self, final: str) -> str:
        """What is left to send of the completion's final text."""
        return final[len(self.sent):] if final.startswith(self.sent) else ""
