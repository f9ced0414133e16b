"""Batched generation with per-token log-probabilities, for the ``hf:`` agent and ``cua serve``.

    generator = Generator(policy)
    [gen] = generator.generate([GenerationRequest(prompt, temperature=0.7, seed=3)])
    gen.text, gen.token_ids, gen.logprobs, gen.prompt_token_ids, gen.finish_reason

One ``model.generate`` call serves a whole batch of requests (left-padded), each with its own
temperature, top-p, token budget and seed. Sampling happens row by row in a logits processor
with a ``torch.Generator`` per request, so a request's tokens depend on its prompt and seed
alone, not on what else shares its batch; temperature 0 is greedy. ``generate`` itself runs
greedy over the processor's choice, with a generation config of our own for the call, so a
checkpoint's saved defaults (Qwen ships ``repetition_penalty=1.05``) change nothing.

``logprobs`` are the log-probabilities of the chosen tokens under the model's own
distribution (log-softmax of the raw logits, before temperature and top-p: vLLM's default),
which is what a forward pass over prompt + completion gives (``inputs.completion_logprobs``).
Vision and turn-start tokens are never generated. Completions end at the first end-of-turn
token (kept in ``token_ids``; not in ``text``), at the request's token budget, or at the first
of its ``stop`` strings, as vLLM has it: the text ends before the string, ``token_ids`` end
with the token that completed it, and ``finish_reason`` is ``stop``.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harness.agents.model import Completion
from harness.prompts import Prompt
from trainers.models.inputs import encode_prompts
from trainers.models.policy import AdaptedModel

if TYPE_CHECKING:
    import torch

    from trainers.models.policy import Policy

#: Tokens a policy never writes: they only make sense in prompts.
NEVER_GENERATED = ("<|im_start|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                   "<|image_pad|>", "<|video_pad|>")


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt and how to sample its completion."""

    prompt: Prompt[bytes]
    max_new_tokens: int = 64
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    seed: int | None = None  # None: drawn from the generator's own stream
    top_logprobs: int = 0  # also return the k most likely tokens at each step
    stop: tuple[str, ...] = ()  # stop strings: the text ends before the first one
    raw_prompt: str | None = None  # the prompt as text, without the chat template (prompt unused)
    #: streaming: called with each token of this completion as it is chosen (from the thread
    #: that generates), up to its end-of-turn token or its budget
    on_token: Callable[[int], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Generation:
    """A completion with its tokens, their log-probabilities and why it ended."""

    text: str
    token_ids: list[int]
    logprobs: list[float]
    prompt_token_ids: list[int]
    finish_reason: Literal["stop", "length"]
    top_logprobs: list[list[tuple[int, float]]] | None = field(default=None)

    def completion(self) -> Completion:
        """As the harness's ``Completion`` (what ``ModelAgent.generate`` returns)."""
        return Completion(text=self.text, token_ids=self.token_ids, logprobs=self.logprobs,
                          prompt_token_ids=self.prompt_token_ids)


class Generator:
    """Batched generation for one policy; thread-safe (one ``generate`` runs at a time)."""

    def __init__(self, policy: Policy, *, seed: int = 0) -> None:
        self.policy = policy
        self.lock = threading.Lock()
        #: model.generate calls made (one per batch), and the wall seconds they took together
        self.calls = 0
        self.seconds = 0.0
        self._rng = random.Random(seed)
        tokenizer = policy.tokenizer
        self.never = [i for i in (tokenizer.convert_tokens_to_ids(t) for t in NEVER_GENERATED)
                      if isinstance(i, int) and i != tokenizer.unk_token_id and i >= 0]
        self.stop_ids = _stop_ids(_hf_model(policy.model), tokenizer)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Completions of ``requests``, in order, from one batched model call."""
        import torch

        if not requests:
            return []
        seeds = [r.seed if r.seed is not None else self._rng.getrandbits(63) for r in requests]
        with self.lock, torch.inference_mode(), _generation_mode(self.policy.model):
            began = time.perf_counter()
            batch = encode_prompts(self.policy, [r.prompt for r in requests],
                                   raw=[r.raw_prompt for r in requests])
            sampler = RowSampler(requests, seeds, self.never, batch["input_ids"].device)
            model = _hf_model(self.policy.model)
            stopping = [StopStrings(requests, self.policy.tokenizer, batch["input_ids"].shape[1])] \
                if any(r.stop for r in requests) else []
            streamer = RowStreamer(requests, self.stop_ids) if any(r.on_token for r in requests) else None
            with _own_generation_config(model, self._config(requests)):
                # Each process generates for its own episodes: never in lockstep with others
                # (transformers would sync the processes of a sharded model, step by step).
                out = model.generate(**batch, logits_processor=[sampler], synced_gpus=False,
                                     stopping_criteria=stopping, streamer=streamer)
            self.calls += 1
            self.seconds += time.perf_counter() - began
        return self._unpack(requests, batch, out)

    def _config(self, requests: Sequence[GenerationRequest]) -> Any:
        from transformers import GenerationConfig

        tokenizer = self.policy.tokenizer
        return GenerationConfig(
            max_new_tokens=max(r.max_new_tokens for r in requests), do_sample=False, num_beams=1,
            eos_token_id=self.stop_ids, pad_token_id=tokenizer.pad_token_id, use_cache=True,
            output_logits=True, return_dict_in_generate=True)

    def _unpack(self, requests: Sequence[GenerationRequest], batch: Any, out: Any) -> list[Generation]:
        prompt_length = batch["input_ids"].shape[1]
        generated = out.sequences[:, prompt_length:]
        chosen, tops = _step_logprobs(out.logits, generated, max(r.top_logprobs for r in requests))
        results = []
        for i, request in enumerate(requests):
            ids = generated[i].tolist()[: request.max_new_tokens]
            end = next((k for k, t in enumerate(ids) if t in self.stop_ids), None)
            ids = ids if end is None else ids[: end + 1]
            text_ids = ids if end is None else ids[:-1]
            text = self.policy.tokenizer.decode(text_ids, skip_special_tokens=True)
            cut = _cut_at_stop(self.policy.tokenizer, text_ids, text, request.stop)
            if cut is not None:
                ids, text, end = ids[: cut[0]], cut[1], cut[0] - 1
            top = [tops[k][i][: request.top_logprobs] for k in range(len(ids))] if request.top_logprobs else None
            mask = batch["attention_mask"][i].bool()
            results.append(Generation(
                text=text, token_ids=ids, logprobs=[chosen[k][i] for k in range(len(ids))],
                prompt_token_ids=batch["input_ids"][i][mask].tolist(),
                finish_reason="length" if end is None else "stop", top_logprobs=top))
        return results


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    """Where the first of ``stops`` begins in ``text``, if one does."""
    found = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(found) if found else None


def _cut_at_stop(tokenizer: Any, ids: list[int], text: str, stops: Sequence[str]
                 ) -> tuple[int, str] | None:
    """(how many tokens it took to write the first stop string, the text before it), or None
    when ``text`` holds none of ``stops``."""
    at = first_stop(text, stops)
    if at is None:
        return None
    for k in range(1, len(ids) + 1):
        if first_stop(tokenizer.decode(ids[:k], skip_special_tokens=True), stops) is not None:
            return k, text[:at]
    return len(ids), text[:at]


class RowStreamer:
    """transformers' streamer hook: hands each row's new token to its request's ``on_token``,
    up to the row's end-of-turn token or its own budget (the batch runs on for longer rows)."""

    def __init__(self, requests: Sequence[GenerationRequest], stop_ids: Sequence[int]) -> None:
        self.requests = requests
        self.stop_ids = set(stop_ids)
        self.counts = [0] * len(requests)
        self.done = [r.on_token is None for r in requests]
        self.prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self.prompt_seen:  # the first call hands over the prompts
            self.prompt_seen = True
            return
        for i, token in enumerate(value.reshape(-1).tolist()):
            callback = self.requests[i].on_token
            if self.done[i] or callback is None:
                continue
            self.counts[i] += 1
            callback(int(token))
            self.done[i] = token in self.stop_ids or self.counts[i] >= self.requests[i].max_new_tokens

    def end(self) -> None:
        return None


class StopStrings:
    """A stopping criterion: a row is done once its completion holds one of its request's
    stop strings (the batch runs on until every row is done or out of budget)."""

    def __init__(self, requests: Sequence[GenerationRequest], tokenizer: Any, prompt_length: int) -> None:
        self.stops = [r.stop for r in requests]
        self.tokenizer = tokenizer
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        import torch

        done = [bool(stops) and first_stop(self.tokenizer.decode(
            row[self.prompt_length:].tolist(), skip_special_tokens=True), stops) is not None
            for row, stops in zip(input_ids, self.stops, strict=True)]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def _step_logprobs(logits: Sequence[torch.Tensor], generated: torch.Tensor, top_k: int
                   ) -> tuple[list[list[float]], list[list[list[tuple[int, float]]]]]:
    """Per step: each row's log-probability of its chosen token, and its ``top_k`` likeliest
    (id, log-probability) pairs; one step's log-softmax at a time (vocabularies are large)."""
    import torch

    chosen, tops = [], []
    for k, step in enumerate(logits):
        logprobs = torch.log_softmax(step.float(), dim=-1)
        chosen.append(logprobs.gather(1, generated[:, k: k + 1]).squeeze(1).tolist())
        if top_k:
            values, ids = logprobs.topk(top_k, dim=-1)
            tops.append([list(zip(i, v, strict=True)) for i, v in zip(ids.tolist(), values.tolist(), strict=True)])
    return chosen, tops


class RowSampler:
    """A logits processor that picks each row's next token itself (greedy at temperature 0,
    else temperature + top-p sampling with the row's own generator) and leaves only that
    token possible, so ``generate``'s greedy step takes it."""

    def __init__(self, requests: Sequence[GenerationRequest], seeds: Sequence[int],
                 never: Sequence[int], device: Any) -> None:
        import torch

        self.temperatures = [r.temperature for r in requests]
        self.top_ps = [r.top_p for r in requests]
        self.never = list(never)
        self.generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        scores = scores.float().clone()
        if self.never:
            scores[:, self.never] = float("-inf")
        choices = [self._choose(i, row) for i, row in enumerate(scores)]
        forced = torch.full_like(scores, float("-inf"))
        forced[torch.arange(len(choices)), torch.tensor(choices, device=scores.device)] = 0.0
        return forced

    def _choose(self, i: int, logits: torch.Tensor) -> int:
        import torch

        temperature = self.temperatures[i]
        if temperature <= 0:
            return int(logits.argmax())
        probs = torch.softmax(logits / temperature, dim=-1)
        if self.top_ps[i] < 1.0:
            sorted_probs, order = probs.sort(descending=True)
            outside = sorted_probs.cumsum(-1) - sorted_probs > self.top_ps[i]  # keeps the first
            sorted_probs[outside] = 0.0
            probs = torch.zeros_like(probs).scatter(0, order, sorted_probs)
        return int(torch.multinomial(probs, 1, generator=self.generators[i]))


def _hf_model(model: Any) -> Any:
    """The transformers model (a peft model's base, whose layers carry the adapters)."""
    return model.get_base_model() if isinstance(model, AdaptedModel) else model


def _stop_ids(model: Any, tokenizer: Any) -> list[int]:
    configured = getattr(model.generation_config, "eos_token_id", None)
    listed = configured if isinstance(configured, list) else [configured]
    ids: list[int] = [int(i) for i in listed if i is not None]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for extra in (end, tokenizer.eos_token_id):
        if isinstance(extra, int) and extra >= 0 and extra not in ids:
            ids.append(extra)
    return ids


@contextlib.contextmanager
def _own_generation_config(model: Any, config: Any) -> Iterator[None]:
    """Generate with ``config`` alone: transformers fills a given config's unset fields from
    the model's saved one, so the saved one is swapped out for the call."""
    saved = model.generation_config
    model.generation_config = config
    try:
        yield
    finally:
        model.generation_config = saved


@contextlib.contextmanager
def _generation_mode(model: Any) -> Iterator[None]:
    """Eval mode (no dropout) for the call, restoring a training model's mode after."""
    training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(training)
