"""One prompt builder: what a model agent sends at a step is, byte for byte, the prompt the
store's exports build for that step. A fake model at the model seam plays a real FSM task
in Chromium (through `cua eval --store`'s runner), one reply unparseable, the rest the
oracle's actions in the codec's syntax; in pixel mode and in the element-list mode."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from harness.agents import Completion, ModelAgent
from harness.prompts import PromptConfig, as_element_action
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from harness.store import TrajectoryStore
from harness.store.export import ExportConfig, _Context, export
from harness.store.index import TreeIndex

PIXELS = PromptConfig(codec="qwen", coordinates="normalized", history_images=2)
ELEMENTS = PromptConfig(codec="json", observation="elements")


class OracleAsText(ModelAgent):
    """A fake model: says something unparseable first, then the oracle's action as text
    (named by its element in the element modes)."""

    name = "oracle-as-text"

    def __init__(self, config: PromptConfig) -> None:
        super().__init__(config, policy_version=3)

    async def act(self, obs, ctx):
        self._env, self._obs = ctx.env, obs  # the fake peeks at the oracle; a model never could
        return await super().act(obs, ctx)

    async def generate(self, prompt):
        if self._obs.step == 0:
            return Completion("I will click the mug, probably.", token_ids=[7, 8], logprobs=[-1.0, -2.0])
        size = Image.open(io.BytesIO(self._obs.screenshot)).size
        action = await self._env.oracle_action()
        if self.prompts.with_elements:
            action = as_element_action(action, self._obs.elements)
        return Completion(self.codec.encode(action, size=size), token_ids=[1], logprobs=[-0.5])


@pytest.mark.parametrize("config", [PIXELS, ELEMENTS], ids=["pixels", "elements"])
async def test_every_stored_step_exports_the_prompt_the_agent_sent(provider, tmp_path, config) -> None:
    store = TrajectoryStore(tmp_path / "store")
    runner = EpisodeRunner(OracleAsText(config), RunnerConfig(progress=False, save_screenshots=False),
                           provider=provider, store=store)
    [record] = await runner.run(episode_specs(["fsm:shop/open_mug"], 1, seed=2))
    assert record.success and record.trajectory[0].error is not None

    [episode] = store.episodes()
    sent = store.episode_steps(episode.id)
    assert [step for step, _, _ in sent] == list(range(1, len(record.trajectory) + 1))
    index = TreeIndex.load(store, episode.tree_id)
    ctx = _Context(store, index, ExportConfig(**config.model_dump()))
    instruction = store.task(episode.task_id).instruction
    path = index.path(episode.leaf_id)
    for (step, node_id, agent), parent in zip(sent, path, strict=False):
        assert index.nodes[node_id].parent_id == parent.id
        rebuilt = ctx.at(parent.id, instruction)
        assert json.dumps(rebuilt["prompt"]) == json.dumps(agent["prompt"]), f"step {step}"
        assert rebuilt["images"] == agent["images"]
        assert agent["policy_version"] == 3 and agent["completion"]
    assert "Last action error:" in sent[1][2]["prompt"][-1]["content"][-1]["text"]
    assert "1. (no valid action)" in sent[1][2]["prompt"][-1]["content"][-1]["text"]

    # the exported rows themselves (JSONL keeps the JSON as built)
    out = export(store, "sft", tmp_path / "sft", ExportConfig(**config.model_dump(), jsonl=True))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(r["on_shortest_path"] for r in rows)
    by_parent = {node_id: agent for _, node_id, agent in sent}
    for row in rows:
        child = index.nodes[row["child_id"]]
        agent = by_parent[child.id]
        assert json.dumps(row["prompt"]) == json.dumps(agent["prompt"])
        assert row["target"] == agent["completion"]
