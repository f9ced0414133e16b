"""Sizes of the random-init models ``cua model init`` writes, and their model configs.

Three presets of one architecture (Qwen2.5-VL by default; Qwen2-VL and Qwen3-VL too), from
about 0.5M to about 20M parameters. The vision tower is kept cheap: few small blocks, and a
processor that shrinks a screenshot to a handful of patches (``max_pixels``; a 28x28-pixel
block becomes one token after the 2x2 merge, 32x32 for Qwen3-VL's 16-pixel patches).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Arch = Literal["qwen2_5_vl", "qwen2_vl", "qwen3_vl"]
#: Most BPE tokens the project's tokenizer learns before Qwen's special tokens.
DEFAULT_VOCAB = 4096
ARCHITECTURES: dict[str, str] = {
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen2_vl": "Qwen2VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
}


class Preset(BaseModel):
    """The shape of one model size."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text_hidden: int = Field(description="language model width")
    text_layers: int = Field(description="language model layers")
    text_heads: int = Field(description="attention heads (head size = width / heads)")
    text_kv_heads: int = Field(description="key/value heads (grouped-query attention)")
    text_ffn: int = Field(description="MLP width of the language model")
    vision_hidden: int = Field(description="vision tower width")
    vision_depth: int = Field(description="vision tower blocks")
    vision_heads: int = Field(description="vision attention heads")
    vision_ffn: int = Field(description="MLP width of the vision tower")
    image_tokens: int = Field(description="most tokens a screenshot becomes (max_pixels / merge block area)")


PRESETS: dict[str, Preset] = {
    "tiny": Preset(text_hidden=64, text_layers=3, text_heads=4, text_kv_heads=2, text_ffn=256,
                   vision_hidden=48, vision_depth=2, vision_heads=2, vision_ffn=96, image_tokens=16),
    "small": Preset(text_hidden=256, text_layers=4, text_heads=8, text_kv_heads=4, text_ffn=640,
                    vision_hidden=96, vision_depth=4, vision_heads=4, vision_ffn=256, image_tokens=64),
    "base": Preset(text_hidden=384, text_layers=8, text_heads=8, text_kv_heads=4, text_ffn=1280,
                   vision_hidden=192, vision_depth=6, vision_heads=4, vision_ffn=512, image_tokens=256),
}


def patch_size(arch: str) -> int:
    """Pixels per patch side: 14 for Qwen2/2.5-VL, 16 for Qwen3-VL."""
    return 16 if arch == "qwen3_vl" else 14


def mrope_section(head_dim: int) -> list[int]:
    """Rotary sections (time, height, width) summing to head_dim / 2, in Qwen's 2:3:3 ratio."""
    half = head_dim // 2
    t = half // 4
    h = (half - t) // 2
    return [t, h, half - t - h]


def model_config(arch: str, preset: Preset, tokens: dict[str, int], vocab_size: int) -> Any:
    """The transformers config of ``arch`` at ``preset`` size; ``tokens`` maps the special
    tokens to their ids."""
    head_dim = preset.text_hidden // preset.text_heads
    text: dict[str, Any] = dict(
        vocab_size=vocab_size, hidden_size=preset.text_hidden, intermediate_size=preset.text_ffn,
        num_hidden_layers=preset.text_layers, num_attention_heads=preset.text_heads,
        num_key_value_heads=preset.text_kv_heads, max_position_embeddings=8192,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "mrope_section": mrope_section(head_dim)},
        bos_token_id=tokens["<|endoftext|>"], eos_token_id=tokens["<|im_end|>"],
        pad_token_id=tokens["<|endoftext|>"],
    )
    ids: dict[str, Any] = dict(image_token_id=tokens["<|image_pad|>"], video_token_id=tokens["<|video_pad|>"],
               vision_start_token_id=tokens["<|vision_start|>"],
               vision_end_token_id=tokens["<|vision_end|>"], tie_word_embeddings=True)
    if arch == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig

        vision = dict(depth=preset.vision_depth, hidden_size=preset.vision_hidden,
                      intermediate_size=preset.vision_ffn, num_heads=preset.vision_heads,
                      out_hidden_size=preset.text_hidden, window_size=112,
                      fullatt_block_indexes=[preset.vision_depth - 1])
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids)
    if arch == "qwen2_vl":
        from transformers import Qwen2VLConfig

        vision = dict(depth=preset.vision_depth, embed_dim=preset.vision_hidden,
                      hidden_size=preset.text_hidden, num_heads=preset.vision_heads,
                      mlp_ratio=max(1, preset.vision_ffn // preset.vision_hidden))
        return Qwen2VLConfig(text_config=text, vision_config=vision, **ids)
    if arch == "qwen3_vl":
        from transformers import Qwen3VLConfig

        text["head_dim"] = head_dim
        text["rope_parameters"]["mrope_interleaved"] = True
        del text["bos_token_id"], text["eos_token_id"]
        vision = dict(depth=preset.vision_depth, hidden_size=preset.vision_hidden,
                      intermediate_size=preset.vision_ffn, num_heads=preset.vision_heads,
                      out_hidden_size=preset.text_hidden, num_position_embeddings=256,
                      deepstack_visual_indexes=[preset.vision_depth - 1])
        return Qwen3VLConfig(text_config=text, vision_config=vision, **ids)
    raise ValueError(f"expected arch in {sorted(ARCHITECTURES)}, got {arch!r}")
