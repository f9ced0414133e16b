"""``cua model init``: a random-init Qwen-VL checkpoint directory for CPUs, built locally.

    report = init_checkpoint(ModelInitConfig(preset="tiny", out=Path("runs/tiny")))
    report.parameters.total        # about 0.5M for tiny

The directory is a complete checkpoint that ``from_pretrained`` loads like a hub model:
``config.json``, ``generation_config.json``, ``model.safetensors``, ``tokenizer.json`` and
``tokenizer_config.json`` (the project's own BPE, ``trainers.models.tokenizer``),
``processor_config.json`` (the image processor's pixel budget), ``chat_template.jinja``
(``trainers.models.chat_template``; the tokenizer config carries its ``response_template``, the
parser of tool calls) and ``cua_model.json`` (how it was made). The same
config and seed give the same bytes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trainers.errors import ModelDirError
from trainers.models.chat_template import CHAT_TEMPLATE, RESPONSE_TEMPLATE
from trainers.models.policy import require_train_extra
from trainers.models.presets import (
    ARCHITECTURES,
    DEFAULT_VOCAB,
    PRESETS,
    Arch,
    model_config,
    patch_size,
)

#: CLIP's mean and std (Qwen2/2.5-VL) and Qwen3-VL's.
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
HALF = [0.5, 0.5, 0.5]


class ModelInitConfig(BaseModel):
    """What ``cua model init`` makes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="the checkpoint directory to write")
    preset: Literal["tiny", "small", "base"] = Field(
        default="tiny", description="model size: tiny (~0.5M parameters), small (~4M), base (~20M)")
    arch: Arch = Field(default="qwen2_5_vl", description="architecture: qwen2_5_vl, qwen2_vl or qwen3_vl")
    seed: int = Field(default=0, description="seed of the random weights")
    image_tokens: int | None = Field(
        default=None, ge=1, description="most tokens a screenshot becomes (sets the processor's "
        "max_pixels); None: the preset's")
    min_image_tokens: int = Field(default=4, ge=1, description="fewest tokens a screenshot becomes "
                                  "(sets min_pixels)")
    vocab_size: int = Field(default=DEFAULT_VOCAB, ge=512, le=65536,
                            description="most BPE tokens learned before the special tokens")
    overwrite: bool = Field(default=False, description="replace an existing directory")


@dataclass(frozen=True)
class ParameterCount:
    """Parameters of a model, by part."""

    vision: int
    language: int
    total: int


@dataclass(frozen=True)
class InitReport:
    """What ``init_checkpoint`` wrote."""

    path: Path
    arch: str
    preset: str
    parameters: ParameterCount
    vocab_size: int
    max_pixels: int


def count_parameters(model: Any) -> ParameterCount:
    """Parameters of a Qwen-VL model: the vision tower (with its merger) and the rest; tied
    embeddings count once."""
    seen: set[int] = set()
    vision = language = 0
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in seen:
            continue
        seen.add(id(param))
        if ".visual." in f".{name}":
            vision += param.numel()
        else:
            language += param.numel()
    return ParameterCount(vision=vision, language=language, total=vision + language)


def init_checkpoint(config: ModelInitConfig) -> InitReport:
    """Write a random-init checkpoint (see the module docstring); deterministic in ``config``."""
    require_train_extra()
    import torch
    from transformers import AutoModelForImageTextToText
    from transformers.utils import logging as hf_logging

    from trainers.models.tokenizer import build_tokenizer, hf_tokenizer

    hf_logging.disable_progress_bar()  # the CLI shows its own status; the shards are one file

    out = _prepare_out(config.out, config.overwrite)
    tokenizer = hf_tokenizer(build_tokenizer(config.vocab_size))
    preset = PRESETS[config.preset]
    tokens = special_token_ids(tokenizer)
    vocab_size = -(-len(tokenizer) // 64) * 64  # rounded up, as Qwen pads its embedding
    model_cfg = model_config(config.arch, preset, tokens, vocab_size)
    torch.manual_seed(config.seed)
    model = AutoModelForImageTextToText.from_config(model_cfg, dtype=torch.float32)
    model.generation_config.eos_token_id = [tokens["<|im_end|>"], tokens["<|endoftext|>"]]
    model.generation_config.pad_token_id = tokens["<|endoftext|>"]
    model.generation_config.bos_token_id = tokens["<|endoftext|>"]
    model.save_pretrained(out)
    max_pixels = _save_processor(config, tokenizer, out)
    parameters = count_parameters(model)
    report = InitReport(path=out, arch=config.arch, preset=config.preset, parameters=parameters,
                        vocab_size=vocab_size, max_pixels=max_pixels)
    info = {"made_by": "cua model init", "architecture": ARCHITECTURES[config.arch],
            **config.model_dump(mode="json", exclude={"out", "overwrite"}),
            "parameters": asdict(parameters), "tokenizer_size": len(tokenizer), "max_pixels": max_pixels}
    (out / "cua_model.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return report


def special_token_ids(tokenizer: Any) -> dict[str, int]:
    """The ids of the special and vision tokens a Qwen-VL model config names, in ``tokenizer``."""
    names = [*tokenizer.all_special_tokens, "<|image_pad|>", "<|video_pad|>", "<|vision_start|>",
             "<|vision_end|>", "<|im_end|>", "<|endoftext|>"]
    tokens: dict[str, int] = {}
    for name in names:
        token_id = tokenizer.convert_tokens_to_ids(name)
        assert isinstance(token_id, int), f"expected one id for {name}, got {token_id!r}"
        tokens[name] = token_id
    return tokens


def _prepare_out(out: Path, overwrite: bool) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ModelDirError(f"--out: expected a directory, got {out}, which is a file; pick another path")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise ModelDirError(f"--out: expected a new or empty directory, got {out}, which holds "
                                "files; pass --overwrite to replace it or pick another path")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _save_processor(config: ModelInitConfig, tokenizer: Any, out: Path) -> int:
    from trainers.models.processor import PROCESSORS, make_image_processor, save_processor

    patch = patch_size(config.arch)
    block = (patch * 2) ** 2  # one token after the 2x2 merge
    max_pixels = block * (config.image_tokens or PRESETS[config.preset].image_tokens)
    min_pixels = min(block * config.min_image_tokens, max_pixels)
    mean, std = (HALF, HALF) if config.arch == "qwen3_vl" else (CLIP_MEAN, CLIP_STD)
    image_processor = make_image_processor(
        {"patch_size": patch, "merge_size": 2, "temporal_patch_size": 2, "image_mean": mean,
         "image_std": std}, min_pixels=min_pixels, max_pixels=max_pixels)
    # saved in tokenizer_config.json: how `parse_response` (TRL's tool loop) reads a turn
    tokenizer.response_template = RESPONSE_TEMPLATE
    processor = PROCESSORS[config.arch][0](image_processor, tokenizer, chat_template=CHAT_TEMPLATE)
    save_processor(processor, out, config.arch)
    return max_pixels
