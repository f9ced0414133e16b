"""GRPO's vllm rollout backend. vLLM installs only on CUDA machines, so here the engine
(``vllm.LLM`` and ``SamplingParams``) is a fake at that seam; the processor, chat template,
prompt builder, policy weights and the agent are real. The real engine runs in the test
marked ``gpu`` (skipped without CUDA and the gpu extra)."""

from __future__ import annotations

import copy
import importlib.util
import sys
import types
from typing import Any

import pytest
import torch

from tests.trainers.test_grpo_train import ROLLOUT, grpo_config, lines, weights
from tests.trainers.test_hf_agent import context, observation
from trainers.errors import ConfigError, MissingExtraError
from trainers.grpo.backends import VLLMBackend, engine_weights, make_vllm_backend
from trainers.models.policy import LoraOptions, PolicyConfig, load_policy


class FakeEngineModel:
    """What ``apply_model`` hands its function: records what ``load_weights`` got."""

    def __init__(self) -> None:
        self.loaded: dict[str, torch.Tensor] = {}

    def load_weights(self, weights: Any) -> set[str]:
        self.loaded.update((name, tensor.clone()) for name, tensor in weights)
        return set(self.loaded)


class FakeLLM:
    """``vllm.LLM`` at the seam: answers every prompt with fixed tokens and log-probs."""

    made: list[FakeLLM] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs, self.model, self.calls, self.resets = kwargs, FakeEngineModel(), [], 0
        FakeLLM.made.append(self)

    def apply_model(self, func: Any) -> list[Any]:
        return [func(self.model)]

    def reset_prefix_cache(self) -> bool:
        self.resets += 1
        return True

    def generate(self, inputs: list[dict], sampling_params: list[Any], use_tqdm: bool) -> list[Any]:
        self.calls.append((inputs, sampling_params))
        ids = [5, 6, 7]
        sample = types.SimpleNamespace(text='{"action": "x"}', token_ids=ids, logprobs=[
            {t: types.SimpleNamespace(logprob=-0.5 * (i + 1)), 99: types.SimpleNamespace(logprob=-9.0)}
            for i, t in enumerate(ids)])
        return [types.SimpleNamespace(outputs=[sample], prompt_token_ids=[1, 2, 3, 4]) for _ in inputs]


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM  # type: ignore[attr-defined]
    module.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    FakeLLM.made.clear()
    return module


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_the_backend_names_the_gpu_extra(tmp_path, tiny_dir, tiny_policy) -> None:
    from trainers.grpo.backends import make_backend

    config = grpo_config(tmp_path, tiny_dir, rollout={**ROLLOUT, "backend": "vllm"})
    with pytest.raises(MissingExtraError, match=r"rollout.backend: expected vLLM .*cua-harness\[gpu\]") as caught:
        make_backend(config, tiny_policy, None)
    assert isinstance(caught.value, ConfigError)  # the CLI's one-line error, exit 2


def test_engine_weights_are_the_checkpoints_names_and_values(tiny_dir, tiny_policy) -> None:
    on_disk = weights(tiny_dir)
    sent = engine_weights(tiny_policy.model)
    tied = {"lm_head.weight"}  # a tied head is left out of one or the other
    assert set(sent) | tied == set(on_disk) | tied, "expected the checkpoint's names (what load_weights reads)"
    assert all(torch.equal(sent[k], on_disk[k]) for k in sent)


def test_engine_weights_merge_lora_deltas_without_touching_the_policy(tiny_dir) -> None:
    policy = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune="lora", lora=LoraOptions(r=4)))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)  # peft starts B at zero: make the deltas real
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    merged = engine_weights(copy.deepcopy(policy.model).merge_and_unload())
    sent = engine_weights(policy.model)
    assert set(sent) == set(merged)
    assert all(torch.allclose(sent[k], merged[k], atol=1e-6) for k in sent)
    assert any(not torch.equal(sent[k], weights(tiny_dir)[k]) for k in sent), "expected the deltas added"
    assert all(torch.equal(p, before[n]) for n, p in policy.model.named_parameters())


@pytest.mark.asyncio(loop_scope="session")
async def test_the_backend_pushes_weights_then_samples_images_through_the_engine(fake_vllm, tiny_dir,
                                                                                 tiny_policy) -> None:
    import os

    config = grpo_config(tiny_dir.parent / "unused", tiny_dir, seed=7,
                         prompt={"codec": "json", "observation": "screenshot", "history_images": 1},
                         rollout={**ROLLOUT, "backend": "vllm", "temperature": 1.0, "max_new_tokens": 3,
                                  "max_wait_ms": 0, "gpu_memory_utilization": 0.25})
    backend = make_vllm_backend(config)
    assert isinstance(backend, VLLMBackend) and os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    [llm] = FakeLLM.made
    assert llm.kwargs["model"] == str(tiny_dir) and llm.kwargs["gpu_memory_utilization"] == 0.25

    with torch.no_grad():
        tiny_policy.model.lm_head.weight.add_(0.0)  # the live tensors, not a stale copy
    await backend.sync(tiny_policy, 3)
    names = engine_weights(tiny_policy.model)
    assert set(llm.model.loaded) == set(names) and llm.resets == 1
    assert all(torch.equal(llm.model.loaded[k], names[k]) for k in names)

    step = await backend.agent.act(observation("home"), context(index=1))
    [(inputs, params)] = llm.calls
    [request], [sampling] = inputs, params
    assert len(request["multi_modal_data"]["image"]) == 1 and request["multi_modal_data"]["image"][0].mode == "RGB"
    assert "<|vision_start|>" in request["prompt"] and request["prompt"].rstrip().endswith("assistant")
    assert (sampling.temperature, sampling.max_tokens, sampling.logprobs) == (1.0, 3, 0)
    assert sampling.seed is not None
    assert step.token_ids == [5, 6, 7] and step.logprobs == [-0.5, -1.0, -1.5]  # the sampled tokens' own
    assert step.prompt_token_ids == [1, 2, 3, 4] and step.policy_version == 3
    assert step.prompt and step.image_steps == [0]


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs the gpu extra (vLLM)")
def test_grpo_with_the_vllm_backend_on_a_gpu(tmp_path, tiny_dir) -> None:
    """Two updates of the tiny model with rollouts on vLLM; the engine ends with the policy's weights."""
    from trainers.grpo.train import Trainer, train_grpo

    seen: dict[str, Any] = {}
    real_close = Trainer.close

    async def close(self):
        engine = self.backend.agent.llm.apply_model(
            lambda m: {n: p.detach().float().cpu() for n, p in m.named_parameters()})[0]
        seen["engine"], seen["policy"] = engine, {n: p.detach().float().cpu()
                                                  for n, p in engine_weights(self.policy.model).items()}
        await real_close(self)

    Trainer.close = close  # type: ignore[method-assign]
    try:
        config = grpo_config(tmp_path / "run", tiny_dir, updates=2, tree={"branch_states": 0},
                             model={"path": str(tiny_dir), "finetune": "full", "device": "auto"},
                             rollout={**ROLLOUT, "backend": "vllm", "max_batch": 8, "gpu_memory_utilization": 0.2})
        train_grpo(config)
    finally:
        Trainer.close = real_close  # type: ignore[method-assign]
    assert [u["policy_version"] for u in lines(tmp_path / "run", "update")] == [0, 1]
    assert seen["engine"] and seen["policy"]
