"""load_policy: inference, LoRA and full fine-tuning on CPU, adapters saved and reloaded."""

from __future__ import annotations

import json

import pytest
import torch

from trainers.errors import ModelDirError
from trainers.models.inputs import completion_ids, completion_logprobs
from trainers.models.policy import AdaptedModel, LoraOptions, PolicyConfig, load_policy

TARGET = '{"type": "click", "x": 12, "y": 40}'


def test_an_inference_policy_has_no_gradients(tiny_policy) -> None:
    assert tiny_policy.trainable_parameters() == 0 and not tiny_policy.model.training
    assert tiny_policy.dtype == torch.float32 and tiny_policy.device.type == "cpu"


def test_lora_with_gradient_checkpointing_learns_a_target_and_reloads(tiny_dir, prompts, tmp_path) -> None:
    torch.manual_seed(0)
    policy = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune="lora",
                                      gradient_checkpointing=True, lora=LoraOptions(r=4, alpha=8, dropout=0.0)))
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n and "language_model" in n for n in trainable)
    assert isinstance(policy.model, AdaptedModel)  # what the GRPO backends and generation ask
    target = completion_ids(policy, TARGET)
    # Plain SGD: each small step must lower the loss if the adapters' gradients are right.
    optimizer = torch.optim.SGD([p for p in policy.model.parameters() if p.requires_grad], lr=1.0)
    losses = []
    for _ in range(3):
        loss = -completion_logprobs(policy, prompts[:1], [target])[0].mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] > losses[1] > losses[2] and losses[2] < losses[0] - 0.2
    saved = policy.save(tmp_path / "adapter")
    assert json.loads((saved / "adapter_config.json").read_text())["base_model_name_or_path"]
    policy.model.eval()
    with torch.no_grad():
        before = completion_logprobs(policy, prompts[:1], [target])[0]
        reloaded = load_policy(PolicyConfig(path=saved, device="cpu"))
        after = completion_logprobs(reloaded, prompts[:1], [target])[0]
    assert torch.allclose(before, after, atol=1e-5)
    assert reloaded.trainable_parameters() == 0


def test_full_finetuning_keeps_the_vision_tower_frozen_unless_asked(tiny_dir) -> None:
    frozen = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune="full"))
    grads = {n: p.requires_grad for n, p in frozen.model.named_parameters()}
    assert not any(g for n, g in grads.items() if ".visual." in f".{n}")
    assert not isinstance(frozen.model, AdaptedModel)
    assert all(g for n, g in grads.items() if ".visual." not in f".{n}")
    everything = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune="full", freeze_vision=False))
    assert everything.trainable_parameters() == sum(p.numel() for p in everything.model.parameters())


def test_bad_directories_are_refused_with_the_reason(tmp_path, tiny_dir) -> None:
    with pytest.raises(ModelDirError, match="expected a model directory with config.json"):
        load_policy(PolicyConfig(path=tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ModelDirError, match="expected a model_type in .*got 'llama'"):
        load_policy(PolicyConfig(path=tmp_path))
    with pytest.raises(ModelDirError, match="CUDA is not available"):
        if torch.cuda.is_available():
            raise ModelDirError("CUDA is not available (skipped: this machine has CUDA)")
        load_policy(PolicyConfig(path=tiny_dir, device="cuda"))
