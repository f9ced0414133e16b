"""An optional pointer head: the policy points at a screenshot patch instead of writing numbers.

As in GUI-Actor, the hidden state at an action position queries the hidden states of the
current screenshot's image tokens; a bilinear score picks the patch to act on. Here the
query is the last prompt token (where the reply starts), so no new vocabulary is needed::

    policy = load_policy(PolicyConfig(path="runs/tiny", finetune="lora", pointer_head=True))
    features = pointer_features(policy, prompts)            # one forward pass
    logits = policy.pointer(features.query, features.keys, features.mask)
    loss = F.cross_entropy(logits, patch_index(point, size, features.grids[i]) ...)
    predict_points(policy, prompts, sizes)                   # [(x, y) in screenshot pixels]

A patch here is one image *token*: a merge x merge block of vision patches (28x28 resized
pixels on Qwen2/2.5-VL, 32x32 on Qwen3-VL), in the row-major order the vision tower emits
them. ``load_policy`` attaches the head as ``policy.pointer`` and ``Policy.save`` writes it
to ``pointer_head.safetensors`` next to the weights. Calibration on the tiny model: the head
learns where clickable things are quickly; which one an instruction names is harder.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from harness.prompts import Prompt
from trainers.models.inputs import PolicyParts, encode_prompts

POINTER_FILE = "pointer_head.safetensors"


class PointerHead(nn.Module):
    """Scores image tokens against a query hidden state (scaled dot product of projections)."""

    def __init__(self, hidden_size: int, dim: int = 128) -> None:
        super().__init__()
        self.query_proj = nn.Linear(hidden_size, dim)
        self.key_proj = nn.Linear(hidden_size, dim)
        self.dim = dim

    def forward(self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``query`` (batch, hidden), ``keys`` (batch, tokens, hidden), ``mask`` (batch,
        tokens) True at real image tokens -> logits (batch, tokens), -inf where masked."""
        q = self.query_proj(query.to(self.query_proj.weight.dtype))
        k = self.key_proj(keys.to(self.key_proj.weight.dtype))
        logits = torch.einsum("bd,bnd->bn", q, k) / math.sqrt(self.dim)
        return logits.masked_fill(~mask, float("-inf"))


def make_pointer_head(policy_model: Any, path: Path | None) -> PointerHead:
    """A head sized for the model, with the weights saved in ``path`` if there are any."""
    config = policy_model.config
    hidden = getattr(config, "text_config", config).hidden_size
    head = PointerHead(hidden)
    file = None if path is None else Path(path) / POINTER_FILE
    if file is not None and file.is_file():
        from safetensors.torch import load_file

        head.load_state_dict(load_file(file))
    return head


def save_pointer_head(head: PointerHead, path: Path) -> None:
    from safetensors.torch import save_file

    save_file({k: v.detach().contiguous().cpu() for k, v in head.state_dict().items()}, Path(path) / POINTER_FILE)


@dataclass
class PointerFeatures:
    """What the head reads: the query state, the current screenshot's token states, and the
    merged token grid (rows, columns) of that screenshot per prompt."""

    query: torch.Tensor  # (batch, hidden)
    keys: torch.Tensor  # (batch, tokens, hidden), zero-padded
    mask: torch.Tensor  # (batch, tokens) bool
    grids: list[tuple[int, int]]


def pointer_features(policy: PolicyParts, prompts: Sequence[Prompt[bytes]]) -> PointerFeatures:
    """One forward pass: the last layer's state at the reply's start and at the tokens of each
    prompt's last (current) screenshot."""
    batch = encode_prompts(policy, prompts)
    out = policy.model(**batch, output_hidden_states=True, use_cache=False)
    hidden = out.hidden_states[-1]
    merge = _merge_size(policy)
    grids = [(int(h) // merge, int(w) // merge) for _, h, w in batch["image_grid_thw"].tolist()]
    last = [sum(len(p.images) for p in prompts[: i + 1]) - 1 for i in range(len(prompts))]
    counts = [grids[j][0] * grids[j][1] for j in last]
    keys = hidden.new_zeros((len(prompts), max(counts), hidden.shape[-1]))
    mask = torch.zeros((len(prompts), max(counts)), dtype=torch.bool, device=hidden.device)
    image_id = policy.model.config.image_token_id
    for i, count in enumerate(counts):
        positions = (batch["input_ids"][i] == image_id).nonzero().squeeze(-1)[-count:]
        keys[i, :count] = hidden[i, positions]
        mask[i, :count] = True
    return PointerFeatures(query=hidden[:, -1], keys=keys, mask=mask, grids=[grids[j] for j in last])


def _merge_size(policy: PolicyParts) -> int:
    return int(policy.processor.image_processor.merge_size)


def patch_index(point: tuple[float, float], size: tuple[int, int], grid: tuple[int, int]) -> int:
    """The image token under ``point`` (screenshot pixels) of a ``size`` screenshot whose
    tokens form a ``grid`` of (rows, columns)."""
    rows, cols = grid
    col = min(int(point[0] * cols / size[0]), cols - 1)
    row = min(int(point[1] * rows / size[1]), rows - 1)
    return row * cols + col


def patch_center(index: int, size: tuple[int, int], grid: tuple[int, int]) -> tuple[int, int]:
    """The screenshot pixel at the centre of image token ``index``."""
    rows, cols = grid
    row, col = divmod(index, cols)
    return (min(int((col + 0.5) * size[0] / cols), size[0] - 1),
            min(int((row + 0.5) * size[1] / rows), size[1] - 1))


def predict_points(policy: PolicyParts, prompts: Sequence[Prompt[bytes]],
                   sizes: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The point the head picks on each prompt's current screenshot (of the given sizes)."""
    if policy.pointer is None:
        raise ValueError("expected a policy loaded with pointer_head=True, got one without a head")
    with torch.no_grad():
        features = pointer_features(policy, prompts)
        logits = policy.pointer(features.query, features.keys, features.mask)
    return [patch_center(int(i), size, grid)
            for i, size, grid in zip(logits.argmax(-1).tolist(), sizes, features.grids, strict=True)]
