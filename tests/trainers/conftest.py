"""Fixtures for the policy-model tests: one tiny checkpoint (built by ``cua model init``'s
code) and its loaded policy for the whole session, prompts from the real prompt builder,
and a real Chromium screenshot of an FSM library page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from harness.prompts import Prompt, PromptBuilder, PromptConfig
from tests.harness.store.helpers import screenshot
from trainers.models.checkpoint import ModelInitConfig, init_checkpoint
from trainers.models.policy import Policy, PolicyConfig, load_policy


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models") / "tiny"
    init_checkpoint(ModelInitConfig(out=out, preset="tiny", seed=0))
    return out


@pytest.fixture(scope="session")
def tiny_policy(tiny_dir: Path) -> Policy:
    return load_policy(PolicyConfig(path=tiny_dir, device="cpu"))


def make_prompt(instruction: str, images: list[bytes], *, codec: str = "json",
                history: int = 0) -> Prompt[bytes]:
    """A prompt from the one prompt builder: ``images`` the last screenshots, ``history``
    earlier clicks listed as previous actions."""
    builder = PromptBuilder(PromptConfig(codec=codec, history_images=max(1, len(images))))
    past = [({"type": "click", "x": 10 + i, "y": 20}, (160, 120), None) for i in range(history)]
    return builder.build(instruction=instruction, history=past, images=images,
                         image_steps=list(range(len(images))), error=None)


@pytest.fixture(scope="session")
def prompts() -> list[Prompt[bytes]]:
    """Three prompts of different lengths, screenshots and image counts."""
    return [make_prompt("Click the red button.", [screenshot("red")]),
            make_prompt("Open the page of Coffee mug, then add it to the cart.",
                        [screenshot("home"), screenshot("mug", (640, 400))], history=2),
            make_prompt("Find Desk lamp.", [screenshot("lamp", (320, 200))], history=1)]


@pytest_asyncio.fixture(scope="session")
async def fsm_screenshot(provider) -> AsyncIterator[bytes]:
    """A real capture: the shop site of the FSM library, rendered by Chromium."""
    from harness.env import AsyncEnv
    from harness.tasks.registry import make_task

    sandbox = await provider.new_browser()
    env = AsyncEnv(make_task("fsm:shop/open_mug"), sandbox)
    try:
        obs, _ = await env.reset(seed=0)
        yield obs.screenshot
    finally:
        await env.close()
        await sandbox.close()


@pytest_asyncio.fixture(scope="session")
async def oracle_store(provider, tmp_path_factory) -> Path:
    """Oracle episodes on two library goals (fsm:shop/open_mug, fsm:settings/cfg_location)
    and two layouts, elements observed."""
    from harness.agents.registry import make_agent
    from harness.records import EpisodeSpec
    from harness.runner import EpisodeRunner, RunnerConfig
    from harness.store import TrajectoryStore

    path = tmp_path_factory.mktemp("training") / "store"
    store = TrajectoryStore(path)
    runner = EpisodeRunner(make_agent("oracle"), RunnerConfig(
        progress=False, save_screenshots=False, elements=True), provider=provider, store=store)
    tasks = ("fsm:shop/open_mug", "fsm:settings/cfg_location")
    records = await runner.run([EpisodeSpec(task_id=t, seed=s, index=0) for t in tasks for s in (0, 1)])
    store.close()
    assert all(r.success for r in records)
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` skip where there is no CUDA device."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
