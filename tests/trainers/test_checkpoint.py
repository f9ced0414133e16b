"""`cua model init`: complete, deterministic checkpoints that transformers loads as usual."""

from __future__ import annotations

import hashlib

import pytest
import torch
from transformers import (
    AutoModelForImageTextToText,
    AutoTokenizer,
    Qwen2_5_VLForConditionalGeneration,
)
from typer.testing import CliRunner

from harness.cli import app
from trainers.errors import ModelDirError
from trainers.models.checkpoint import ModelInitConfig, count_parameters, init_checkpoint
from trainers.models.generation import GenerationRequest, Generator
from trainers.models.policy import PolicyConfig, load_policy

FILES = {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
         "tokenizer_config.json", "processor_config.json", "chat_template.jinja", "cua_model.json"}


def _digests(path):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.iterdir())}


def test_same_seed_same_bytes_other_seed_other_weights(tiny_dir, tmp_path) -> None:
    again = init_checkpoint(ModelInitConfig(out=tmp_path / "again", seed=0)).path
    other = init_checkpoint(ModelInitConfig(out=tmp_path / "other", seed=1)).path
    assert set(_digests(tiny_dir)) == FILES
    assert _digests(again) == _digests(tiny_dir)
    changed = {k for k, v in _digests(other).items() if v != _digests(tiny_dir)[k]}
    assert changed == {"model.safetensors", "cua_model.json"}


def test_from_pretrained_loads_it_like_a_hub_model(tiny_dir) -> None:
    auto = AutoModelForImageTextToText.from_pretrained(tiny_dir)
    direct = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_dir)
    assert type(auto) is Qwen2_5_VLForConditionalGeneration
    for (name, a), (_, b) in zip(auto.state_dict().items(), direct.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    assert auto.config.image_token_id == tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert auto.config.text_config.vocab_size >= len(tokenizer)
    assert auto.generation_config.eos_token_id[0] == tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_presets_span_half_a_million_to_twenty_million_parameters(tmp_path) -> None:
    counts = {}
    for preset in ("tiny", "small", "base"):
        report = init_checkpoint(ModelInitConfig(out=tmp_path / preset, preset=preset))
        loaded = AutoModelForImageTextToText.from_pretrained(report.path)
        assert count_parameters(loaded) == report.parameters  # what was printed is what loads
        counts[preset] = report.parameters.total
    assert 400_000 <= counts["tiny"] <= 700_000
    assert 2_000_000 <= counts["small"] <= 8_000_000
    assert 15_000_000 <= counts["base"] <= 25_000_000


@pytest.mark.parametrize("arch, model_class", [("qwen2_vl", "Qwen2VLForConditionalGeneration"),
                                               ("qwen3_vl", "Qwen3VLForConditionalGeneration")])
def test_other_architectures_load_and_generate(tmp_path, prompts, arch, model_class) -> None:
    path = init_checkpoint(ModelInitConfig(out=tmp_path / arch, arch=arch)).path
    policy = load_policy(PolicyConfig(path=path, device="cpu"))
    assert type(policy.model).__name__ == model_class
    [gen] = Generator(policy).generate([GenerationRequest(prompts[0], max_new_tokens=3)])
    assert len(gen.token_ids) == 3 and len(gen.logprobs) == 3


def test_cli_prints_the_counts_and_refuses_a_full_directory(tmp_path) -> None:
    out = tmp_path / "cli"
    result = CliRunner().invoke(app, ["model", "init", "--out", str(out), "--image-tokens", "9"])
    assert result.exit_code == 0, result.output
    assert "total" in result.output and "vision tower" in result.output
    assert '"max_pixels": 7056' in (out / "cua_model.json").read_text()  # 9 tokens x 28 x 28
    again = CliRunner().invoke(app, ["model", "init", "--out", str(out)])
    assert again.exit_code == 2 and "--overwrite" in again.output
    with pytest.raises(ModelDirError, match="expected a new or empty directory"):
        init_checkpoint(ModelInitConfig(out=out))
