"""Envs in Ray actors: a real local Ray, real actors with real Chromium, a real kill."""

from __future__ import annotations

import os
import signal

import pytest
import ray

from harness.agents.registry import make_agent
from harness.env_providers import make_env_provider
from harness.errors import ConfigError
from harness.ray_envs import RayConfig, RayEnv, RayEnvs
from harness.rollout import RolloutSink
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from harness.store.store import TrajectoryStore
from sandboxes import procs
from sandboxes.leftovers import descendants
from tests.conftest import wait_until

TASKS = ["fsm:shop/open_mug", "fsm:bank"]


@pytest.fixture(scope="module")
def local_ray():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


def _outcomes(records) -> list[tuple]:
    return sorted((r.task, r.seed, r.success, r.steps, r.error) for r in records)


async def test_a_ray_eval_matches_the_plain_runner_and_writes_on_the_driver(local_ray, tmp_path) -> None:
    specs = episode_specs(TASKS, 2, seed=5)
    for agent_name, max_steps in (("oracle", None), ("random", 4)):
        runs = {}
        for use_ray in (False, True):
            config = RunnerConfig(concurrency=3, ray=use_ray, max_steps=max_steps, progress=False,
                                  save_screenshots=False)
            store = TrajectoryStore(tmp_path / f"{agent_name}-{use_ray}")
            try:
                runner = EpisodeRunner(make_agent(agent_name), config, store=store,
                                       out_dir=tmp_path / f"out-{agent_name}-{use_ray}")
                runs[use_ray] = _outcomes(await runner.run(specs))
                assert store.counts()["episodes"] == len(specs)  # written here, by the driver
            finally:
                store.close()
        assert runs[True] == runs[False], agent_name
        assert all(error is None for *_, error in runs[True])
        if agent_name == "oracle":
            assert all(success for *_, success, _, _ in runs[True])
    assert not ray.util.list_named_actors()  # nothing registered globally


class KillHostOnFirstStep(RolloutSink):
    """Kills (SIGKILL) the actor process hosting this episode's env at its first step."""

    def __init__(self, killed: list[dict]) -> None:
        self.killed = killed

    async def on_step(self, episode, transition) -> None:
        if self.killed or transition.step != 1:
            return None
        env = episode.env
        assert isinstance(env, RayEnv)
        pid = await env.actor.handle.pid.remote()
        self.killed.append({"pid": pid, "children": [i.pid for i in descendants(pid)]})
        os.kill(pid, signal.SIGKILL)
        return None


async def test_a_dead_actor_is_replaced_and_its_episodes_retried(local_ray, tmp_path) -> None:
    envs = RayEnvs(RayConfig(envs_per_actor=2))
    killed: list[dict] = []
    config = RunnerConfig(concurrency=4, progress=False, save_screenshots=False)
    specs = episode_specs(["fsm:shop/open_mug"], 10, seed=0)
    runner = EpisodeRunner(make_agent("oracle"), config, envs=envs, out_dir=tmp_path,
                           sinks=lambda spec: [KillHostOnFirstStep(killed)] if spec.seed == 2 else [])
    try:
        records = await runner.run(specs)
        assert envs.replaced >= 1
        assert len([a for a in envs.actors if not a.dead]) >= 1
    finally:
        await envs.close()
    assert len(killed) == 1
    by_seed = {r.seed: r for r in records}
    assert sorted(by_seed) == list(range(10))
    assert all(r.success and r.error is None for r in records), [r.error for r in records]
    assert by_seed[2].attempts >= 2  # the episode that saw its host die was run again
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 10  # one writer, one line per episode
    # The dead actor's browser and driver went with it.
    assert killed[0]["children"], "expected the actor to have started a browser"
    assert await wait_until(lambda: not any(procs.is_alive(p) for p in killed[0]["children"]),
                            timeout=30)


def test_ray_is_chosen_one_way_and_names_its_inner_provider() -> None:
    assert isinstance(make_env_provider("ray"), RayEnvs)
    assert make_env_provider("ray:isolated").config.inner == "isolated"
    with pytest.raises(ConfigError, match="other than ray"):
        make_env_provider("ray:ray")
    with pytest.raises(ValueError, match="either --ray or --provider ray"):
        RunnerConfig(provider="ray:local", ray=True)
