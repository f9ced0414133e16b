"""Restore by jump and by replay, and a short tree collection, on a real FSM site in Chromium."""

from __future__ import annotations

import re

import pytest

from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from harness.actions import Click
from harness.agents import ModelAgent
from harness.env import AsyncEnv
from harness.errors import RestoreMismatch
from harness.prompts import PromptConfig
from harness.store import FLAG_RESTORE_MISMATCH, NodeStatus, Step, TrajectoryStore
from harness.store.explore import ExploreConfig, Explorer
from harness.store.hindsight import hindsight_tasks
from harness.store.restore import restore_node
from harness.tasks.fsm import FSMTask, goal_tasks
from tests.fsm_sites.widgets_spec import tiny_shop

pytestmark = pytest.mark.asyncio(loop_scope="session")
SEED = 3


@pytest.fixture(scope="module")
async def site_server():
    async with SiteServer([tiny_shop()]) as server:
        yield server


@pytest.fixture(scope="module")
async def shop_env(provider, site_server):
    task = next(t for t in goal_tasks(tiny_shop()) if t.goal == "lamp_in_cart")
    sandbox = await provider.new_browser()
    env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server)), sandbox, max_steps=20)
    yield env
    await env.close()
    await sandbox.close()


@pytest.fixture(scope="module")
async def oracle_store(shop_env, tmp_path_factory) -> TrajectoryStore:
    """One oracle episode from the root (browser steps are slow on two shared cores)."""
    store = TrajectoryStore(tmp_path_factory.mktemp("oracle"))
    config = ExploreConfig(budget=20, max_episodes=1, agent="oracle", explore="independent",
                           seed=SEED, max_depth=10)
    report = await Explorer(store, shop_env, config, env_key="tiny_shop").run()
    assert report.episodes == 1
    return store


async def test_restore_by_jump_costs_no_steps_and_matches(shop_env, oracle_store):
    store = oracle_store
    episode = store.episodes()[0]
    assert episode.success and episode.steps >= 2
    node = store.path_to(episode.leaf_id)[-2]  # one step before the goal
    restored = await restore_node(shop_env, store, node.id, seed=SEED, mode="jump")
    assert restored.mode == "jump" and restored.env_steps == 0
    assert "fsm:" + (await shop_env.task.current_state()).key() == node.state_key
    assert restored.phash_distance <= 6
    _, _, terminated, _, info = await shop_env.step(store.node(episode.leaf_id).action)
    assert info.success and terminated  # the restored state really is one step from the goal


async def test_restore_by_replay_walks_the_path(shop_env, oracle_store):
    store = oracle_store
    leaf = store.node(store.episodes()[0].leaf_id)
    node = store.path_to(leaf.id)[-2]
    spent: list[int] = []
    restored = await restore_node(shop_env, store, node.id, seed=SEED, mode="replay", spend=spent.append)
    assert restored.mode == "replay" and restored.env_steps == node.depth == sum(spent)
    assert "fsm:" + (await shop_env.task.current_state()).key() == node.state_key


async def test_restoring_the_root_is_a_reset_neither_jump_nor_replay(shop_env, oracle_store):
    root = oracle_store.trees()[0].root_id
    restored = await restore_node(shop_env, oracle_store, root, seed=SEED)
    assert restored.mode == "reset" and restored.env_steps == 0
    explorer = Explorer(oracle_store, shop_env, ExploreConfig(seed=SEED), env_key="tiny_shop")
    assert await explorer._restore(oracle_store.node(root)) is not None
    assert (explorer.report.restores_jump, explorer.report.restores_replay) == (0, 0)


async def test_replay_that_diverges_flags_the_node_and_raises(shop_env, oracle_store):
    store = oracle_store
    parent = store.path_to(store.episodes()[0].leaf_id)[1]
    obs_blob = store.blob(parent.obs_blob)
    writer = store.begin_episode("tiny_shop", from_node=parent.id)
    # the tree claims a click on empty space led to another state; the site disagrees
    writer.add_step(Step(action=Click(x=3, y=700).model_dump(), action_text="click(3, 700)",
                         screenshot=obs_blob, url=parent.url, state_key="fsm:cart"))
    bogus = writer.commit().leaf_id
    with pytest.raises(RestoreMismatch, match=f"node {bogus}: expected replay step 2 to reach 'fsm:cart'"):
        await restore_node(shop_env, store, bogus, seed=SEED, mode="replay")
    assert FLAG_RESTORE_MISMATCH in store.node(bogus).flags

    explorer = Explorer(store, shop_env, ExploreConfig(restore="replay", seed=SEED), env_key="tiny_shop")
    assert await explorer._restore(store.node(bogus)) is None
    # both replayed steps ran before the mismatch, so the budget paid for them
    assert (explorer.report.env_steps, explorer.report.restore_mismatches) == (2, 1)


async def test_tree_collection_branches_succeeds_and_resumes(shop_env, tmp_path):
    store = TrajectoryStore(tmp_path)
    config = ExploreConfig(budget=10, agent="oracle", explore="tree", candidates=2, max_depth=6, seed=SEED)
    first = await Explorer(store, shop_env, config, env_key="tiny_shop").run()
    assert first.env_steps >= 10 and first.successes >= 2 and first.restores_jump >= 1
    assert first.restore_mismatches == 0
    nodes = store.nodes()
    assert max(len(store.children(n.id)) for n in nodes) >= 2  # the tree branched
    assert all(n.status is not NodeStatus.EXPLORING for n in nodes)
    assert {e.task_id for e in store.episodes()} == {"tiny_shop"}
    assert store.task("tiny_shop").tree_id == store.trees()[0].id  # filled in after the first commit

    root = store.trees()[0].root_id
    second = await Explorer(store, shop_env, config.model_copy(update={"budget": 2}),
                            env_key="tiny_shop").run()
    assert len(store.trees()) == 1 and store.trees()[0].root_id == root
    assert len(store.episodes()) == first.episodes + second.episodes

    tasks = hindsight_tasks(store, store.trees()[0].id)
    assert tasks and all(t.source == "hindsight" and t.goal_state for t in tasks)
    assert all(t.instruction.endswith(".") for t in tasks)


class OracleAsText(ModelAgent):
    """A fake model at the model seam: the task's oracle action, as json-codec text."""

    name = "fake-model"

    def __init__(self) -> None:
        super().__init__(PromptConfig(codec="json"))

    async def act(self, obs, ctx):
        self._env = ctx.env
        return await super().act(obs, ctx)

    async def generate(self, prompt):
        action = await self._env.oracle_action()
        return self.codec.encode(action)


async def test_a_model_agent_grows_a_tree_from_restored_nodes_with_their_history(shop_env, tmp_path):
    store = TrajectoryStore(tmp_path)
    config = ExploreConfig(budget=12, explore="tree", candidates=2, max_depth=6, seed=SEED)
    report = await Explorer(store, shop_env, config, env_key="tiny_shop", agent=OracleAsText()).run()
    assert report.successes >= 2 and report.restores_jump >= 1
    assert {e.agent for e in store.episodes()} == {"fake-model"}
    branched = [e for e in store.episodes() if store.path_to(e.leaf_id)[0].id != e.leaf_id]
    deep = []
    for episode in branched:
        for _, node_id, agent in store.episode_steps(episode.id):
            if "prompt" not in agent:
                continue  # a random candidate, not the model's own step
            depth = store.node(node_id).depth
            text = agent["prompt"][-1]["content"][-1]["text"]
            # the prompt lists every action from the root, the restored prefix included
            listed = [line for line in text.splitlines() if re.match(r"\d+\. ", line)]
            assert len(listed) == depth - 1, (depth, text)
            deep.append(depth)
    assert max(deep) >= 2
