"""The replies ``cua serve`` sends, built from ``openai.types`` (so they are what the official
client parses): chat completions and their stream chunks, text completions and theirs.

Beyond OpenAI's fields, every reply carries ``policy_version`` and, when asked with
``return_token_ids`` (as vLLM has it), ``prompt_token_ids`` and ``choices[].token_ids``.
Generation is batched, not token by token: a stream sends each choice's role, then its whole
text (with its log-probabilities) in one chunk, then its ``finish_reason``, then the usage
when ``stream_options.include_usage`` asks for it, then ``[DONE]``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
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

from trainers.models.generation import Generation
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


def chat_chunks(request: ChatRequest, generations: list[Generation], *, model: str, tokenizer: Any,
                policy_version: int) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` events of a streamed reply (see the module docstring)."""
    head: dict[str, Any] = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model, "policy_version": policy_version}
    if request.return_token_ids:
        head["prompt_token_ids"] = generations[0].prompt_token_ids

    def chunk(choices: list[ChunkChoice], **more: Any) -> dict[str, Any]:
        return _dump(ChatCompletionChunk(**head, choices=choices, **more))

    for i, gen in enumerate(generations):
        yield chunk([ChunkChoice(index=i, delta=ChoiceDelta(role="assistant", content=""),
                                 finish_reason=None, logprobs=None)])
        logprobs = ChunkLogprobs(content=_chat_logprobs(tokenizer, gen)) if request.logprobs else None
        yield chunk([ChunkChoice(index=i, delta=ChoiceDelta(content=gen.text), finish_reason=None,
                                 logprobs=logprobs, **_ids(request, gen))])
        yield chunk([ChunkChoice(index=i, delta=ChoiceDelta(), finish_reason=gen.finish_reason,
                                 logprobs=None)])
    if request.include_usage:
        yield chunk([], usage=_usage(generations, 1))


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


def text_chunks(request: CompletionRequest, generations: list[Generation], *, model: str,
                tokenizer: Any, policy_version: int) -> Iterator[dict[str, Any]]:
    """A streamed ``text_completion``: one chunk per choice, then the usage if asked for."""
    head: dict[str, Any] = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
            "model": model, "policy_version": policy_version}
    for choice in _text_choices(request, generations, tokenizer):
        yield _dump(Completion(**head, choices=[choice]))
    if request.include_usage:
        yield _dump(Completion(**head, choices=[], usage=_usage(generations, len(request.prompts))))
