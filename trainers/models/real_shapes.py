"""Random-init policies with a released model's shapes, to measure speed and memory.

    policy = random_policy("qwen2.5-vl-3b", device="cuda", dtype="bfloat16", finetune="lora",
                           gradient_checkpointing=True)

The shapes are the released checkpoint's own ``config.json`` (and its image processor's
``preprocessor_config.json``), shipped under ``trainers/models/configs/``; nothing is
downloaded. The weights are random and the tokenizer is the project's own
(``trainers.models.tokenizer``), so the config's special-token ids are replaced by that
tokenizer's; the vocabulary size stays the released one, so the embedding and the output
layer cost what they cost in the real model. The processor is the project's image-only one
with the released pixel budget, so a 1280x800 screenshot becomes the 1,334 image tokens it
becomes for the real model. ``benchmarks/bench_gpu.py`` times the GRPO update with it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

from trainers.errors import ModelDirError
from trainers.models.chat_template import CHAT_TEMPLATE
from trainers.models.checkpoint import special_token_ids
from trainers.models.policy import (
    Policy,
    PolicyConfig,
    prepare_policy,
    resolve_device,
    resolve_dtype,
)

CONFIGS = Path(__file__).parent / "configs"
#: name -> the directory holding the released config.json and preprocessor_config.json
REAL_CONFIGS: dict[str, Path] = {"qwen2.5-vl-3b": CONFIGS / "qwen2_5_vl_3b"}


@cache
def _tokenizer_json() -> str:
    """The project's tokenizer, trained once per process (a few seconds of BPE)."""
    from trainers.models.tokenizer import build_tokenizer

    return str(build_tokenizer().to_str())


def real_config(name: str) -> Any:
    """The transformers config of ``name`` with the project tokenizer's special-token ids,
    and that tokenizer."""
    from tokenizers import Tokenizer
    from transformers import AutoConfig

    from trainers.models.tokenizer import hf_tokenizer

    if name not in REAL_CONFIGS:
        raise ModelDirError(f"expected a model name in {sorted(REAL_CONFIGS)}, got {name!r}")
    tokenizer = hf_tokenizer(Tokenizer.from_str(_tokenizer_json()))
    tokens = special_token_ids(tokenizer)
    config = AutoConfig.from_pretrained(REAL_CONFIGS[name])
    ids = {"image_token_id": tokens["<|image_pad|>"], "video_token_id": tokens["<|video_pad|>"],
           "vision_start_token_id": tokens["<|vision_start|>"],
           "vision_end_token_id": tokens["<|vision_end|>"]}
    for key, value in ids.items():
        setattr(config, key, value)
    for target in (config, config.text_config):
        target.bos_token_id = target.pad_token_id = tokens["<|endoftext|>"]
        target.eos_token_id = tokens["<|im_end|>"]
    return config, tokenizer


def random_policy(name: str, *, device: str = "auto",
                  dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto",
                  finetune: Literal["none", "lora", "full"] = "none",
                  gradient_checkpointing: bool = False, seed: int = 0, **options: Any) -> Policy:
    """A random-init policy of ``name``'s shapes on ``device``, set up like ``load_policy``
    sets up a checkpoint (``options``: more ``PolicyConfig`` fields, e.g. ``lora``)."""
    import torch
    from transformers import AutoModelForImageTextToText

    from trainers.models.processor import PROCESSORS, image_processor_settings, make_image_processor

    config, tokenizer = real_config(name)
    policy_config = PolicyConfig(path=REAL_CONFIGS[name], device=device, dtype=dtype, finetune=finetune,
                                 gradient_checkpointing=gradient_checkpointing, **options)
    where = resolve_device(device)
    torch.manual_seed(seed)
    with where:  # the weights are made where they run: no 7.5 GB host copy
        model = AutoModelForImageTextToText.from_config(config, dtype=resolve_dtype(dtype, where))
    model = model.to(where)  # a no-op, unless a transformers version made them elsewhere
    model.generation_config.eos_token_id = [config.text_config.eos_token_id, config.text_config.pad_token_id]
    model.generation_config.pad_token_id = config.text_config.pad_token_id
    settings = image_processor_settings(REAL_CONFIGS[name])
    image_processor = make_image_processor(settings, min_pixels=policy_config.min_pixels,
                                           max_pixels=policy_config.max_pixels)
    kind = config.model_type
    processor = PROCESSORS[kind][0](image_processor, tokenizer, chat_template=CHAT_TEMPLATE)
    return prepare_policy(model, processor, kind, policy_config)
