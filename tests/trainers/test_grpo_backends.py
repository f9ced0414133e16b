"""GRPO's rollout backends: the openai backend pushes the trained weights into our own
`cua serve` (POST /v1/weights) and its rollouts then sample from them, over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import torch
from aiohttp import web

from tests.trainers.test_hf_agent import context, observation
from trainers.agents.openai_agent import OpenAIAgent
from trainers.agents.options import OpenAIAgentOptions
from trainers.errors import EndpointError
from trainers.grpo.backends import HFBackend, OpenAIBackend
from trainers.models.inputs import completion_logprobs
from trainers.models.policy import PolicyConfig, load_policy
from trainers.serve.app import PolicyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def server(tiny_dir) -> AsyncIterator[tuple[PolicyServer, str]]:
    served = PolicyServer(load_policy(PolicyConfig(path=tiny_dir, device="cpu")), name="tiny",
                          max_batch=4, max_wait_ms=0, max_new_tokens=16)
    runner = web.AppRunner(served.app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield served, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    await runner.cleanup()


async def test_sync_loads_the_trained_weights_into_cua_serve(server, tiny_dir, tmp_path) -> None:
    served, url = server
    policy = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune="full"))
    with torch.no_grad():  # a training step's worth of change
        for p in policy.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    agent = OpenAIAgent(url, OpenAIAgentOptions(codec="json", max_new_tokens=8, temperature=1.0))
    backend = OpenAIBackend(agent, tmp_path / "weights", keep=1)
    await backend.sync(policy, 3)
    assert served.policy_version == 3
    mine, theirs = policy.model.state_dict(), served.policy.model.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)

    obs = observation("home")
    step = await agent.act(obs, context(index=1))
    assert step.policy_version == 3 and step.token_ids and step.logprobs
    prompt = agent.prompts.build(instruction=obs.instruction, history=[], images=[obs.screenshot],
                                 image_steps=[0], error=None)
    policy.model.eval()
    with torch.no_grad():
        [expected] = completion_logprobs(policy, [prompt], [step.token_ids])
    assert step.logprobs == pytest.approx(expected.tolist(), abs=1e-4)  # the ratio's denominator

    await backend.sync(policy, 4)
    assert served.policy_version == 4 and [p.name for p in (tmp_path / "weights").iterdir()] == ["v4"]


async def test_a_server_without_weight_updates_is_a_clear_error(tiny_dir, tmp_path) -> None:
    policy = load_policy(PolicyConfig(path=tiny_dir, device="cpu", finetune="full"))
    agent = OpenAIAgent("http://127.0.0.1:9/v1", OpenAIAgentOptions(codec="json"))
    with pytest.raises(EndpointError, match="to take the new weights"):
        await OpenAIBackend(agent, tmp_path / "w").sync(policy, 1)


async def test_the_hf_backend_only_records_the_version(tiny_policy) -> None:
    from trainers.agents.hf import HFAgent

    backend = HFBackend(HFAgent(tiny_policy))
    await backend.sync(tiny_policy, 7)
    assert backend.agent.policy_version == 7
