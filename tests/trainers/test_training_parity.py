"""Token parity: what the SFT trainer trains on for a stored step is, token for token, the
prompt the `hf:` agent fed the model at that step followed by the target's tokens, with
labels on the target's tokens only.

The tiny model plays a real FSM task in Chromium as an `hf:` agent (its real generation
records the prompt token ids it was fed); each reply is then replaced by the oracle's action,
so the episode advances and every step lands in the SFT export. The trainer's collator then
encodes those export rows."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from harness.agents.model import Completion
from harness.prompts import PromptConfig, as_element_action
from harness.records import EpisodeSpec
from harness.runner import EpisodeRunner, RunnerConfig
from harness.store import TrajectoryStore
from harness.store.index import TreeIndex
from trainers.agents.hf import HFAgent
from trainers.agents.options import HFAgentOptions
from trainers.models.inputs import completion_ids
from trainers.training.data import SFTCollator, as_dataset, export_rows, read_export, sft_examples

MODES = {"elements": PromptConfig(codec="json", observation="elements", system_prompt=False),
         "pixels": PromptConfig(codec="qwen", history_images=2)}


class ModelThenOracle(HFAgent):
    """The real hf: agent; its reply text is swapped for the oracle's action afterwards."""

    async def act(self, obs, ctx):
        self._env, self._obs = ctx.env, obs  # the test peeks at the oracle; a model never could
        return await super().act(obs, ctx)

    async def generate(self, prompt):
        generated = await super().generate(prompt)
        action = await self._env.oracle_action()
        if self.prompts.with_elements:
            action = as_element_action(action, self._obs.elements)
        size = Image.open(io.BytesIO(self._obs.screenshot)).size
        return Completion(self.codec.encode(action, size=size),
                          prompt_token_ids=generated.prompt_token_ids)


@pytest.mark.parametrize("mode", list(MODES))
async def test_trained_tokens_are_the_agents_prompt_tokens_plus_the_target(
        mode, provider, tiny_policy, tmp_path) -> None:
    prompt = MODES[mode]
    store = TrajectoryStore(tmp_path / "store")
    agent = ModelThenOracle(tiny_policy, HFAgentOptions(**prompt.model_dump(), max_new_tokens=2))
    runner = EpisodeRunner(agent, RunnerConfig(progress=False, save_screenshots=False),
                           provider=provider, store=store)
    [record] = await runner.run([EpisodeSpec(task_id="fsm:shop/add_lamp", seed=3, index=0)])
    assert record.success and record.steps >= 3
    [episode] = store.episodes()
    fed = {node_id: agent_step["prompt_token_ids"] for _, node_id, agent_step in store.episode_steps(episode.id)}
    index = TreeIndex.load(store, episode.tree_id)
    store.close()

    export = export_rows(tmp_path / "store", "sft", tmp_path / "data", prompt)
    rows = read_export(export)
    assert len(rows) == record.steps
    examples = sft_examples(rows, export)
    batch = SFTCollator(tiny_policy)(list(as_dataset(examples)))
    for i, row in enumerate(rows):
        assert index.nodes[row["child_id"]].parent_id == row["node_id"]
        prompt_ids = fed[row["child_id"]]
        target_ids = completion_ids(tiny_policy, row["target"])
        length = int(batch["attention_mask"][i].sum())
        assert batch["input_ids"][i, :length].tolist() == prompt_ids + target_ids
        assert batch["labels"][i, :length].tolist() == [-100] * len(prompt_ids) + target_ids
        assert (batch["labels"][i, length:] == -100).all()
    if mode == "pixels":  # screenshots made it through as image tokens, two per prompt at most
        assert batch["pixel_values"].shape[0] > 0 and batch["image_grid_thw"].shape[0] >= len(rows)
