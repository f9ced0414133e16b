"""RemoteEnv against real servers: the same typed results as a local env, the extras,
and infrastructure failures (a browser crash, a dead server) as retried errors."""

from __future__ import annotations

import os
import signal

import pytest

from harness.actions import ClickElement
from harness.agents import OracleAgent
from harness.codecs import get_codec
from harness.env import Env
from harness.env_providers import EnvOptions, LocalEnvs, make_env_provider
from harness.errors import ConfigError, InfrastructureError
from harness.rollout import RolloutSink
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from harness.server.client import RemoteEnvs
from harness.server.errors import EnvServerUnreachable, RemoteSandboxCrashed
from harness.server.sessions import SessionPool
from sandboxes.providers import LocalProvider
from tests.harness.server.conftest import TOKEN, start_server

OPTIONS = EnvOptions(reward="step", elements=True)


def same_observation(local, remote) -> None:
    """Every field, the screenshot's bytes and the element list included; the URL names
    each env's own site session, so only its path shape is the same."""
    assert remote.model_copy(update={"url": None}) == local.model_copy(update={"url": None})
    assert remote.url.split("/s/")[0].startswith("http://127.0.0.1:")


def same_reset(local: tuple, remote: tuple) -> None:
    (lobs, linfo), (robs, rinfo) = local, remote
    same_observation(lobs, robs)
    skip = {"episode_id", "reset_seconds"}
    assert rinfo.model_dump(exclude=skip) == linfo.model_dump(exclude=skip)


def same_step(local: tuple, remote: tuple) -> None:
    same_observation(local[0], remote[0])
    assert remote[1:4] == local[1:4]
    skip = {"episode_id", "step_seconds"}
    assert remote[4].model_dump(exclude=skip) == local[4].model_dump(exclude=skip)


async def test_a_remote_env_gives_what_a_local_env_gives(served, provider) -> None:
    local_envs, remote_envs = LocalEnvs(provider), RemoteEnvs(served.url, TOKEN)
    local = await local_envs.open("fsm:shop", OPTIONS)
    remote = await remote_envs.open("fsm:shop", OPTIONS)
    try:
        assert isinstance(remote, Env) and remote.task_id == "fsm:shop"
        same_reset(await local.reset(seed=4), await remote.reset(seed=4))
        assert remote.can_jump and remote.session_id in served.pool.sessions
        oracle = await local.oracle_action()
        assert await remote.oracle_action() == oracle
        qwen = get_codec("qwen", coordinates="normalized")  # an agent's own codec, configured
        size = (local.last_observation.width, local.last_observation.height)
        steps = [
            ("{not an action", None),  # the agent's mistake, the same on both
            (qwen.encode(oracle, size=size), qwen),  # decoded by the agent's codec, client-side
            ('{"type": "click", "x": 5, "y": 5}', None),  # decoded on the server (json)
            (ClickElement(element="definitely not there"), None),
        ]
        for action, codec in steps:
            same_step(await local.step(action, codec=codec), await remote.step(action, codec=codec))
        # an agent's action dict off the schema: its mistake on both (the server itself
        # refuses such a dict with 422; the client sends it as text with the decode error)
        off_schema = {"type": "click", "x": -5, "y": 5}
        mine, theirs = await local.step(off_schema), await remote.step(off_schema)
        assert theirs[0].last_action_error == mine[0].last_action_error is not None
        assert theirs[0].step == mine[0].step and theirs[1] == mine[1]
        last = await remote.step({"type": "done"})
        assert last[4].verdict is not None and last[2]  # terminated by done
    finally:
        await local_envs.release(local)
        await remote_envs.release(remote)
        await local_envs.close()
        await remote_envs.close()


async def test_jump_observe_and_the_oracle_travel(served) -> None:
    envs = RemoteEnvs(served.url, TOKEN)
    env = await envs.open("fsm:shop", EnvOptions())
    try:
        _, info = await env.reset(seed=0)
        _, _, _, _, step = await env.step(await env.oracle_action())
        middle = step.verdict.state_after
        obs, reached = await env.jump(info.fsm_state, steps=0)
        assert reached == info.fsm_state and obs.step == 0
        obs, reached = await env.jump(middle, steps=1)
        assert reached == middle and (await env.observe()).step == 1
        *_, done = await env.step(await env.oracle_action())
        assert done.success and done.verdict.state_before == middle
        miniwob = await envs.open("miniwob:click-test", EnvOptions())
        await miniwob.reset(seed=0)
        assert not miniwob.can_jump
        with pytest.raises(ConfigError, match="expected a task that can jump"):
            await miniwob.jump(middle, steps=1)
        await envs.release(miniwob)
    finally:
        await envs.close()


class KillChromiumOnce(RolloutSink):
    """Kills the server's Chromium after the first step of the first attempt."""

    def __init__(self, provider: LocalProvider) -> None:
        self.provider, self.killed = provider, False

    async def on_step(self, episode, transition):
        if not self.killed:
            self.killed = True
            os.kill(self.provider.host.browser_pid, signal.SIGKILL)
        return None


async def test_a_crashed_session_is_an_infrastructure_error_and_the_episode_is_retried(tmp_path):
    own = LocalProvider()  # killing the session's shared browser would disturb other tests
    server = await start_server(SessionPool(LocalEnvs(own), tasks=["fsm:shop"], expose=["oracle"]))
    envs = RemoteEnvs(server.url, TOKEN)
    try:
        env = await envs.open("fsm:shop", EnvOptions())
        await env.reset(seed=0)
        os.kill(own.host.browser_pid, signal.SIGKILL)
        with pytest.raises(RemoteSandboxCrashed) as crashed:
            await env.step(await env.oracle_action())
        assert isinstance(crashed.value, InfrastructureError) and crashed.value.shared
        await env.reset(seed=0)  # the server dropped the dead env; a reset opens a fresh one
        await envs.release(env)

        sink = KillChromiumOnce(own)
        runner = EpisodeRunner(OracleAgent(), RunnerConfig(progress=False, concurrency=1),
                               out_dir=tmp_path, envs=envs, sinks=lambda spec: [sink])
        [record] = await runner.run(episode_specs(["fsm:shop"], episodes=1, seed=0))
        assert sink.killed and record.error is None
        assert record.attempts == 2 and record.success and record.steps == 2
    finally:
        await envs.close()
        await server.stop()
        await own.close()


async def test_a_dead_server_is_an_infrastructure_error(provider) -> None:
    server = await start_server(SessionPool(LocalEnvs(provider), tasks=["miniwob:click-test"]))
    envs = RemoteEnvs(server.url, TOKEN)
    try:
        env = await envs.open("miniwob:click-test", EnvOptions())
        await env.reset(seed=0)
        await server.stop()
        with pytest.raises(EnvServerUnreachable):
            await env.step({"type": "click", "x": 5, "y": 5})
        with pytest.raises(ConfigError, match="start one with `cua env-server`"):
            await envs.start()
    finally:
        await envs.close()


def test_the_registry_makes_remote_providers_and_wants_a_url_and_a_token(monkeypatch) -> None:
    monkeypatch.setenv("CUA_ENV_TOKEN", "t")
    envs = make_env_provider("remote:http://127.0.0.1:9")
    assert isinstance(envs, RemoteEnvs) and envs.url == "http://127.0.0.1:9"
    with pytest.raises(ConfigError, match="remote:URL"):
        make_env_provider("remote")
    monkeypatch.delenv("CUA_ENV_TOKEN")
    with pytest.raises(ConfigError, match="CUA_ENV_TOKEN"):
        make_env_provider("remote:http://127.0.0.1:9")
    assert RunnerConfig(provider="remote:http://x:1").provider == "remote:http://x:1"
