"""``vllm:PATH``: vLLM's in-process engine (the optional ``gpu`` extra; CUDA only).

    pip install 'cua-harness[gpu]'
    cua eval --suite fsm:shop --agent 'vllm:/models/Qwen2.5-VL-3B-Instruct?max_batch=32'

Untested in this repository's CI: vLLM installs only on CUDA machines (and pins its own
transformers). The agent renders each prompt with the checkpoint's chat template (the same
processor the ``hf:`` agent uses), batches concurrent episodes' prompts with ``Batcher``
into one ``LLM.generate`` call, and records vLLM's prompt and completion token ids and the
sampled tokens' log-probabilities. Each request carries a seed from its episode's stream.
"""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import Any

from harness.agents.base import AgentContext, AgentStep
from harness.agents.batching import Batcher
from harness.agents.model import Completion, ModelAgent
from harness.observation import Observation
from harness.prompts import Prompt
from trainers.agents.options import VLLMAgentOptions, parse_options, read_agent_file, split_spec
from trainers.errors import MissingExtraError, ModelDirError
from trainers.models.inputs import open_image, render

_STEP_SEED: contextvars.ContextVar[int | None] = contextvars.ContextVar("vllm_step_seed", default=None)


def _vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise MissingExtraError("vllm agent: expected vLLM to be installed, got none; install the gpu "
                                "extra on a CUDA machine (pip install 'cua-harness[gpu]') or use "
                                "hf:PATH, or openai:URL against `vllm serve`") from exc
    return vllm


class VLLMAgent(ModelAgent):
    """A ``ModelAgent`` over ``vllm.LLM`` (see the module docstring)."""

    name = "vllm"

    def __init__(self, path: Path, options: VLLMAgentOptions | None = None) -> None:
        from trainers.models.processor import load_processor

        self.options = options or VLLMAgentOptions()
        super().__init__(self.options.prompt_config(), policy_version=self.options.policy_version)
        vllm = _vllm()
        pixels = {k: v for k, v in (("min_pixels", self.options.min_pixels),
                                    ("max_pixels", self.options.max_pixels)) if v}
        self.processor = load_processor(path, **pixels)
        self.llm = vllm.LLM(model=str(path), dtype=self.options.dtype, seed=self.options.seed,
                            gpu_memory_utilization=self.options.gpu_memory_utilization,
                            max_model_len=self.options.max_model_len,
                            limit_mm_per_prompt={"image": self.options.history_images},
                            mm_processor_kwargs=pixels or None)
        self.batcher: Batcher[tuple[Prompt[bytes], int | None], Completion] = Batcher(
            self._generate_batch, max_batch=self.options.max_batch, max_wait_ms=self.options.max_wait_ms)

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        token = _STEP_SEED.set((ctx.rng.getrandbits(62) + self.options.seed * 1_000_003) % (1 << 62))
        try:
            return await super().act(obs, ctx)
        finally:
            _STEP_SEED.reset(token)

    async def generate(self, prompt: Prompt[bytes]) -> Completion:
        return await self.batcher((prompt, _STEP_SEED.get()))

    async def _generate_batch(self, requests: list[tuple[Prompt[bytes], int | None]]) -> list[Completion]:
        return await asyncio.to_thread(self._generate_sync, requests)

    def _generate_sync(self, requests: list[tuple[Prompt[bytes], int | None]]) -> list[Completion]:
        vllm = _vllm()
        inputs = [{"prompt": render(self.processor, prompt.messages),
                   "multi_modal_data": {"image": [open_image(i) for i in prompt.images]}}
                  for prompt, _ in requests]
        params = [vllm.SamplingParams(temperature=self.options.temperature, top_p=self.options.top_p,
                                      max_tokens=self.options.max_new_tokens, seed=seed, logprobs=0)
                  for _, seed in requests]
        outputs = self.llm.generate(inputs, sampling_params=params, use_tqdm=False)
        return [_completion(out) for out in outputs]


def _completion(out: Any) -> Completion:
    sample = out.outputs[0]
    ids = list(sample.token_ids)
    logprobs = [float(step[token].logprob) for step, token in zip(sample.logprobs or [], ids, strict=False)]
    return Completion(text=sample.text, token_ids=ids,
                      logprobs=logprobs if len(logprobs) == len(ids) else None,
                      prompt_token_ids=list(out.prompt_token_ids or []) or None)


def make(arg: str | None) -> VLLMAgent:
    """The registry's factory: ``vllm:PATH[?option=value&...]``."""
    target, _, query = split_spec("vllm", arg)
    path = Path(target).expanduser()
    if not path.is_dir():
        raise ModelDirError(f"vllm agent: expected a model directory, got {target!r}")
    options = parse_options(VLLMAgentOptions, "vllm", read_agent_file(path), query)
    _vllm()
    return VLLMAgent(path, options)
