"""Model inputs from the prompt builder's prompts, for generation and for training.

A ``harness.prompts.Prompt[bytes]`` holds chat messages whose ``{"type": "image"}`` parts
stand for its encoded screenshots (PNG or JPEG bytes). Generation and every trainer turn it
into tensors here, so a model is trained on exactly the tokens it generates from:

    batch = encode_prompts(policy, prompts)                  # left-padded, for generate()
    ids = completion_ids(policy, "click(x=3, y=4)")          # a target's tokens + <|im_end|>
    logps = completion_logprobs(policy, prompts, [ids, ...]) # per-token log-probs (with grad
                                                             # when the model trains)
    encoded = encode_completions(policy, prompts, [ids, ...])
    logits, targets, counts = completion_logits(model, encoded)  # the LM head run only where
                                                             # a completion token is predicted

Prompt tokens are the chat template's rendering (with the generation prompt) tokenized with
each image's ``<|image_pad|>`` expanded; completion tokens are appended after them as
generation would produce them, so ``completion_logprobs`` of a generated completion
reproduces the generation's own log-probabilities.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from PIL import Image

from harness.prompts import Message, Prompt

if TYPE_CHECKING:
    import torch


class PolicyParts(Protocol):
    """What these helpers use of a ``trainers.models.policy.Policy`` (declared here, as the
    policy module imports modules that import this one)."""

    model: Any
    processor: Any
    pointer: Any

    @property
    def tokenizer(self) -> Any: ...

    @property
    def device(self) -> Any: ...


def open_image(data: bytes) -> Image.Image:
    """An encoded screenshot (PNG, JPEG, ...) as an RGB PIL image."""
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except (OSError, ValueError) as exc:
        raise ValueError(f"expected an encoded image (PNG or JPEG bytes), got {len(data)} bytes "
                         f"that PIL cannot read: {exc}") from exc
    return image.convert("RGB")


def render(processor: Any, messages: list[Message], *, add_generation_prompt: bool = True) -> str:
    """The chat template's text of ``messages`` (images as the template's vision tokens)."""
    return processor.apply_chat_template(messages, add_generation_prompt=add_generation_prompt,
                                         tokenize=False)


def _check_images(prompt: Prompt[bytes]) -> None:
    slots = sum(1 for m in prompt.messages if isinstance(m.get("content"), list)
                for part in m["content"] if part.get("type") == "image")
    if slots != len(prompt.images):
        raise ValueError(f"expected one image per image part of the prompt, got {slots} parts "
                         f"and {len(prompt.images)} images")


def encode_prompts(policy: PolicyParts, prompts: Sequence[Prompt[bytes]], *,
                   padding_side: str = "left", raw: Sequence[str | None] | None = None) -> Any:
    """The processor's batch for ``prompts`` on the policy's device (left-padded for generation).
    ``raw[i]``, where given, is prompt i's text as is, without the chat template (``cua
    serve``'s ``/v1/completions``)."""
    for prompt in prompts:
        _check_images(prompt)
    texts = [text if text is not None else render(policy.processor, p.messages)
             for p, text in zip(prompts, raw or [None] * len(prompts), strict=True)]
    images = [open_image(image) for p in prompts for image in p.images]
    batch = policy.processor(text=texts, images=images or None, return_tensors="pt", padding=True,
                             padding_side=padding_side)
    return batch.to(policy.device)


def completion_ids(policy: PolicyParts, text: str) -> list[int]:
    """The tokens of an assistant reply ``text`` as the model would generate it: the text's
    tokens and the end-of-turn token."""
    tokenizer = policy.tokenizer
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) + [end_of_turn(tokenizer)]


def end_of_turn(tokenizer: Any) -> int:
    """The id of ``<|im_end|>`` (the tokenizer's eos on Qwen checkpoints)."""
    token = tokenizer.convert_tokens_to_ids("<|im_end|>")
    return int(token if token is not None and token != tokenizer.unk_token_id else tokenizer.eos_token_id)


@dataclass
class EncodedCompletions:
    """Prompts with completions appended (right-padded): the model inputs and which
    positions hold completion tokens."""

    inputs: dict[str, Any]
    completion_mask: torch.Tensor  # (batch, length) bool: True at completion tokens
    prompt_lengths: list[int]


def encode_completions(policy: PolicyParts, prompts: Sequence[Prompt[bytes]],
                       completions: Sequence[Sequence[int]]) -> EncodedCompletions:
    """Each prompt's tokens followed by its completion's, right-padded into one batch."""
    import torch

    if len(prompts) != len(completions):
        raise ValueError(f"expected one completion per prompt, got {len(completions)} for {len(prompts)}")
    batch = encode_prompts(policy, prompts, padding_side="right")
    mask = batch["attention_mask"].bool()
    rows = [batch["input_ids"][i][mask[i]].tolist() for i in range(len(prompts))]
    types = [batch["mm_token_type_ids"][i][mask[i]].tolist() for i in range(len(prompts))] \
        if "mm_token_type_ids" in batch else None
    length = max(len(r) + len(c) for r, c in zip(rows, completions, strict=True))
    pad = policy.tokenizer.pad_token_id or 0
    input_ids = torch.full((len(rows), length), pad, dtype=torch.long)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    completion_mask = torch.zeros((len(rows), length), dtype=torch.bool)
    type_ids = torch.zeros((len(rows), length), dtype=torch.long)
    for i, (row, completion) in enumerate(zip(rows, completions, strict=True)):
        full = row + list(completion)
        input_ids[i, : len(full)] = torch.tensor(full)
        attention[i, : len(full)] = 1
        completion_mask[i, len(row): len(full)] = True
        if types is not None:
            type_ids[i, : len(row)] = torch.tensor(types[i])
    inputs = {k: v for k, v in batch.items() if k not in ("input_ids", "attention_mask", "mm_token_type_ids")}
    inputs.update(input_ids=input_ids, attention_mask=attention)
    if types is not None:
        inputs["mm_token_type_ids"] = type_ids
    device = policy.device
    return EncodedCompletions(inputs={k: v.to(device) for k, v in inputs.items()},
                              completion_mask=completion_mask.to(device),
                              prompt_lengths=[len(r) for r in rows])


def completion_logprobs(policy: PolicyParts, prompts: Sequence[Prompt[bytes]],
                        completions: Sequence[Sequence[int]]) -> list[torch.Tensor]:
    """Per-token log-probabilities of each completion given its prompt, in one forward pass
    (differentiable when the model's parameters require grad)."""
    import torch

    encoded = encode_completions(policy, prompts, completions)
    logits, targets, counts = completion_logits(policy.model, encoded)
    picked = torch.log_softmax(logits.float(), dim=-1)
    values = picked.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return list(values.split(counts))


def completion_logits(model: torch.nn.Module, encoded: EncodedCompletions) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """``model``'s logits that predict the completion tokens, flattened row by row to
    (tokens, vocab); those tokens, (tokens,); and each row's count of them. The LM head runs
    only at those positions (``kept_logits``)."""
    import torch

    mask = encoded.completion_mask
    keep = torch.zeros_like(mask)
    keep[:, :-1] = mask[:, 1:]  # position t predicts token t + 1
    targets = encoded.inputs["input_ids"][:, 1:][mask[:, 1:]]
    return kept_logits(model, encoded.inputs, keep), targets, keep.sum(dim=1).tolist()


def kept_logits(model: torch.nn.Module, inputs: dict[str, Any], keep: torch.Tensor) -> torch.Tensor:
    """``model``'s logits (no KV cache) at the positions where the boolean ``keep`` (batch x
    length) is True, flattened row by row to (kept, vocab). Where this transformers takes a
    boolean ``logits_to_keep`` the LM head runs only there: the vocabulary is large and the
    kept positions are often a few percent of the padded batch. Otherwise, and for a forward
    that ignores the argument, every position's logits are computed and the kept ones picked."""
    call = {k: v for k, v in inputs.items() if k != "logits_to_keep"}
    call["use_cache"] = False
    if keeps_masked_logits():
        call["logits_to_keep"] = keep
    logits = model(**call).logits
    if logits.ndim == 3 and logits.shape[:2] == keep.shape:
        logits = logits[keep]
    kept = int(keep.sum())
    if logits.ndim != 2 or logits.shape[0] != kept:
        raise TypeError(f"expected the model's logits at the {kept} kept positions, got shape "
                        f"{tuple(logits.shape)}; its forward must take a boolean logits_to_keep "
                        "(transformers >= 5) or ignore it")
    return logits


@functools.cache
def keeps_masked_logits() -> bool:
    """Whether this transformers' models take a boolean ``logits_to_keep`` (per-row positions)."""
    import torch

    try:
        from transformers.modeling_utils import slice_logits_to_keep
    except ImportError:
        return False
    return bool(slice_logits_to_keep(torch.zeros(1, 2, 1), torch.tensor([[True, False]])).shape == (1, 1))
