"""The episode runner: crash retries, agent errors, setup errors, timeouts, codecs,
streaming results, resume, sinks, one shared agent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal

import pytest

import harness.env_providers as env_providers
from harness.actions import Click
from harness.agents import AgentStep, ModelAgent, OracleAgent
from harness.errors import UnknownTaskError
from harness.evaluation import summarize
from harness.rollout import RolloutSink
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs, read_results
from harness.tasks.miniwob import MiniWoBTask
from sandboxes.errors import SandboxStartError
from sandboxes.providers import LocalProvider


class KillBrowserOnce(OracleAgent):
    """Plays the oracle, but on its first acts kills the shared Chromium with SIGKILL, until
    ``kills`` kills have found a browser."""

    def __init__(self, provider: LocalProvider, kills: int = 1) -> None:
        self.provider, self.kills = provider, kills

    async def act(self, obs, ctx):
        pid = self.provider.host.browser_pid
        if self.kills and pid is not None:
            # At concurrency, another episode's kill may have got there first and the browser
            # is not back yet: only a kill that finds it counts.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                self.kills -= 1
        return await super().act(obs, ctx)


class BreaksOnSecondStep:
    """Clicks the empty instruction box once, then raises."""

    name = "broken"

    async def act(self, obs, ctx):
        if ctx.history:
            raise ValueError("agent bug")
        return AgentStep(action=Click(x=80, y=20))


class ClicksInQwen(ModelAgent):
    """A model agent on its default codec whose model always clicks the same point."""

    async def generate(self, prompt):
        return self.codec.encode(Click(x=80, y=100))


class SlowSetup(MiniWoBTask):
    async def setup(self, sandbox, *, seed, resources):
        await asyncio.sleep(3)
        return await super().setup(sandbox, seed=seed, resources=resources)


class FirstSandboxFails:
    """The shared provider, except that its first new_sandbox() fails."""

    def __init__(self, provider: LocalProvider) -> None:
        self.provider, self.calls = provider, 0
        self.kinds = provider.kinds

    async def start(self) -> None:
        await self.provider.start()

    async def new_sandbox(self, request):
        self.calls += 1
        if self.calls == 1:
            raise SandboxStartError("no sandbox for you")
        return await self.provider.new_sandbox(request)

    async def close(self) -> None:
        return None


async def test_browser_killed_mid_episode_is_retried_and_completes(tmp_path) -> None:
    async with LocalProvider() as provider:
        first_pid = provider.host.browser_pid
        runner = EpisodeRunner(KillBrowserOnce(provider), RunnerConfig(concurrency=1, progress=False),
                               out_dir=tmp_path, provider=provider)
        [record] = await runner.run(episode_specs(["miniwob:click-test"], 1, seed=5))
        assert provider.host.browser_pid != first_pid and provider.host.is_alive()
    assert record.error is None and record.attempts == 2
    assert record.success and record.reward > 0 and record.steps == 1
    assert [r.attempts for r in read_results(tmp_path / "results.jsonl")] == [2]


async def test_an_agent_that_raises_fails_its_episode_scored_kept_never_retried(provider, tmp_path) -> None:
    config = RunnerConfig(progress=False, retries=3)
    runner = EpisodeRunner(BreaksOnSecondStep(), config, out_dir=tmp_path, provider=provider)
    specs = episode_specs(["miniwob:click-test"], 1, seed=0)
    [record] = await runner.run(specs)
    assert record.attempts == 1 and record.error is None and record.agent_error == "ValueError: agent bug"
    assert not record.success and record.steps == 1 and len(record.trajectory) == 1
    assert (tmp_path / record.final_screenshot).is_file()
    summary = summarize(read_results(tmp_path / "results.jsonl"))
    assert summary["episodes"] == 1 and summary["success_rate"] == 0.0
    resumed = EpisodeRunner(BreaksOnSecondStep(), config.model_copy(update={"resume": True}),
                            out_dir=tmp_path, provider=provider)
    assert await resumed.run(specs) == []


async def test_a_model_agent_is_decoded_with_its_own_codec(provider) -> None:
    runner = EpisodeRunner(ClicksInQwen(), RunnerConfig(progress=False, max_steps=1), provider=provider)
    [record] = await runner.run(episode_specs(["miniwob:click-test"], 1, seed=0))
    step = record.trajectory[0]
    assert step.error is None and step.action == {"type": "click", "x": 80, "y": 100}


async def test_step_timeout_limits_reset_too(provider, monkeypatch) -> None:
    monkeypatch.setattr(env_providers, "make_task", lambda task_id: SlowSetup("click-test"))
    config = RunnerConfig(progress=False, retries=0, step_timeout_s=1.0)
    [record] = await EpisodeRunner(OracleAgent(), config, provider=provider).run(
        episode_specs(["miniwob:click-test"], 1, seed=0))
    assert record.error is not None and "EpisodeTimeout" in record.error and "reset" in record.error


async def test_a_setup_error_is_recorded_while_the_other_episodes_run(provider, tmp_path) -> None:
    runner = EpisodeRunner(OracleAgent(), RunnerConfig(progress=False, retries=0, concurrency=2),
                           out_dir=tmp_path, provider=FirstSandboxFails(provider))
    records = await runner.run(episode_specs(["miniwob:click-test"], 2, seed=0))
    assert sorted((r.error or "ok").split(":")[0] for r in records) == ["SandboxStartError", "ok"]
    assert len(read_results(tmp_path / "results.jsonl")) == 2


async def test_an_unknown_task_fails_before_anything_starts(tmp_path) -> None:
    runner = EpisodeRunner(OracleAgent(), RunnerConfig(progress=False), out_dir=tmp_path)
    specs = episode_specs(["miniwob:click-test", "miniwob:clik-test"], 1, seed=0)
    with pytest.raises(UnknownTaskError, match="did you mean 'click-test'"):
        await runner.run(specs)
    assert runner.provider is None and not (tmp_path / "results.jsonl").exists()


class Seen(RolloutSink):
    """A caller's sink: what every step of every episode looked like."""

    def __init__(self, key: tuple, seen: list) -> None:
        self.key, self.seen = key, seen

    async def on_step(self, episode, transition):
        self.seen.append((self.key, transition.before.step, transition.after.step,
                          transition.reward, transition.info.success))


async def test_results_stream_screenshots_sinks_and_resume(provider, tmp_path) -> None:
    seen: list[tuple] = []
    config = RunnerConfig(concurrency=2, progress=False)
    specs = episode_specs(["miniwob:click-test", "miniwob:click-button"], 2, seed=10)
    runner = EpisodeRunner(OracleAgent(), config, out_dir=tmp_path, provider=provider,
                           sinks=lambda spec: [Seen(spec.key, seen)])
    records = await runner.run(specs)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(records) == len(lines) == 4
    assert {tuple(json.loads(line)[k] for k in ("task", "seed", "index")) for line in lines} == {
        s.key for s in specs
    }
    assert all(r.success for r in records) and len(seen) == 4
    assert all(b == 0 and a == 1 and r > 0 and ok for _, b, a, r, ok in seen)
    step = records[0].trajectory[0]
    assert (tmp_path / step.screenshot).is_file() and (tmp_path / records[0].final_screenshot).is_file()
    assert step.action["type"] == "click"

    resumed = EpisodeRunner(OracleAgent(), config.model_copy(update={"resume": True}),
                            out_dir=tmp_path, provider=provider)
    assert await resumed.run(specs) == []
    more = episode_specs(["miniwob:click-test", "miniwob:click-button"], 3, seed=10)
    new = await resumed.run(more)
    assert sorted(r.index for r in new) == [2, 2]
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 6


def test_torn_last_line_is_skipped(tmp_path) -> None:
    good = {"task": "miniwob:click-test", "seed": 1, "index": 0, "episode": "e"}
    (tmp_path / "results.jsonl").write_text(json.dumps(good) + "\n" + '{"task": "mini')
    assert [r.key for r in read_results(tmp_path / "results.jsonl")] == [("miniwob:click-test", 1, 0)]


async def test_shared_browser_crashes_do_not_use_up_retries(tmp_path) -> None:
    """Three kills of the shared browser at concurrency 4, with retries=0: every episode
    still completes, because a crash of the shared browser is retried apart from retries."""
    async with LocalProvider() as provider:
        config = RunnerConfig(concurrency=4, progress=False, retries=0)
        runner = EpisodeRunner(KillBrowserOnce(provider, kills=3), config, out_dir=tmp_path,
                               provider=provider)
        records = await runner.run(episode_specs(["miniwob:click-test"], 8, seed=0))
    assert len(records) == 8 and all(r.error is None and r.success for r in records)
    assert max(r.attempts for r in records) >= 2


async def test_one_agent_serves_every_concurrent_episode(provider) -> None:
    """The runner shares the agent: episodes keep their own state in the context, so the
    agent object sees all of them (what lets a model agent batch their calls)."""

    class Counting(OracleAgent):
        def __init__(self) -> None:
            self.episodes: set[tuple] = set()

        async def act(self, obs, ctx):
            self.episodes.add((ctx.task_id, ctx.seed, ctx.index))
            return await super().act(obs, ctx)

    agent = Counting()
    config = RunnerConfig(concurrency=3, progress=False)
    records = await EpisodeRunner(agent, config, provider=provider).run(
        episode_specs(["miniwob:click-test"], 3, seed=0))
    assert all(r.success for r in records) and len(agent.episodes) == 3


async def test_a_long_wait_extends_the_episode_timeout(provider) -> None:
    """An episode of waits takes longer than episode_timeout_s by design, not as a hang:
    the limit moves by each wait before it runs (each wait here is longer than the whole
    limit), typed or as text the codec decodes."""

    class Waits:
        name = "waiter"

        async def act(self, obs, ctx):
            from harness.actions import Wait

            return AgentStep(action=Wait(seconds=4.0))

    class WaitsAsText(Waits):
        async def act(self, obs, ctx):
            return AgentStep(text='{"type": "wait", "seconds": 4.0}')

    config = RunnerConfig(progress=False, retries=0, max_steps=2, episode_timeout_s=3.0)
    for agent in (Waits(), WaitsAsText()):
        [record] = await EpisodeRunner(agent, config, provider=provider).run(
            episode_specs(["miniwob:click-test"], 1, seed=0))
        assert record.error is None and record.steps == 2 and record.wall_seconds >= 8.0
