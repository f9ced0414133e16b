"""``hf:PATH``: a Qwen-VL policy through transformers' generate, batched across episodes.

    cua eval --suite fsm:shop --agent 'hf:runs/tiny?codec=json&max_batch=8' --concurrency 8

Every episode of a run shares one agent; each ``act`` builds its prompt with the one prompt
builder and hands it to a ``Batcher``, which calls the model once for up to ``max_batch``
waiting prompts (left-padded; one worker thread, so the event loop keeps stepping other
episodes). A step records the prompt, the completion, its token ids and per-token
log-probabilities. Sampling (``temperature > 0``) draws each step's seed from the
episode's own random stream, so a rerun samples the same tokens whatever else shared the
batch. A trainer that holds a ``Policy`` makes the agent directly:
``HFAgent(policy, HFAgentOptions(codec="json"))``.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
from pathlib import Path

from harness.agents.base import AgentContext, AgentStep
from harness.agents.batching import Batcher
from harness.agents.model import Completion, ModelAgent
from harness.observation import Observation
from harness.prompts import Prompt
from trainers.agents.options import HFAgentOptions, parse_options, read_agent_file, split_spec
from trainers.errors import ModelDirError
from trainers.models.generation import Generation, GenerationRequest, Generator
from trainers.models.policy import Policy, PolicyConfig, load_policy

#: The sampling seed of the step being decided (set by ``act`` for ``generate``).
_STEP_SEED: contextvars.ContextVar[int | None] = contextvars.ContextVar("hf_step_seed", default=None)


class HFAgent(ModelAgent):
    """A ``ModelAgent`` over a loaded ``Policy`` (see the module docstring)."""

    name = "hf"

    def __init__(self, policy: Policy, options: HFAgentOptions | None = None) -> None:
        self.options = options or HFAgentOptions()
        super().__init__(self.options.prompt_config(), policy_version=self.options.policy_version)
        self.policy = policy
        self.generator = Generator(policy, seed=self.options.seed)
        self.batcher: Batcher[GenerationRequest, Generation] = Batcher(
            self._generate_batch, max_batch=self.options.max_batch, max_wait_ms=self.options.max_wait_ms)

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        seed = (ctx.rng.getrandbits(63) + self.options.seed * 1_000_003) % (1 << 63)
        token = _STEP_SEED.set(seed)
        try:
            return await super().act(obs, ctx)
        finally:
            _STEP_SEED.reset(token)

    def sampling(self, temperature: float) -> HFAgent:
        """This agent at ``temperature``, sharing the policy, the generator and the batcher
        (each request carries its own temperature, so greedy and sampled steps batch together)."""
        agent = copy.copy(self)
        agent.options = self.options.model_copy(update={"temperature": temperature})
        return agent

    async def generate(self, prompt: Prompt[bytes]) -> Completion:
        options = self.options
        request = GenerationRequest(prompt, max_new_tokens=options.max_new_tokens,
                                    temperature=options.temperature, top_p=options.top_p,
                                    seed=_STEP_SEED.get())
        return (await self.batcher(request)).completion()

    async def _generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        return await asyncio.to_thread(self.generator.generate, requests)


def make(arg: str | None) -> HFAgent:
    """The registry's factory: ``hf:PATH[?option=value&...]``."""
    target, _, query = split_spec("hf", arg)
    path = Path(target).expanduser()
    if not path.is_dir():
        raise ModelDirError(f"hf agent: expected a model directory, got {target!r}, which "
                            f"{'is a file' if path.exists() else 'does not exist'}; make one with "
                            "`cua model init --out DIR` or pass a checkpoint directory")
    options = parse_options(HFAgentOptions, "hf", read_agent_file(path), query)
    policy = load_policy(PolicyConfig(path=path, device=options.device, dtype=options.dtype,
                                      min_pixels=options.min_pixels, max_pixels=options.max_pixels))
    return HFAgent(policy, options)
