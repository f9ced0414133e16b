"""The episode runner: crash retries, agent errors, streaming results, resume, callbacks."""

from __future__ import annotations

import json
import os
import signal

from harness.agents import OracleAgent
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs, read_results
from sandboxes.browser_host import BrowserHost


class KillBrowserOnce(OracleAgent):
    """Plays the oracle, but on the very first act kills Chromium with SIGKILL."""

    killed = 0

    def __init__(self, host: BrowserHost) -> None:
        self.host = host

    async def act(self, obs, ctx):
        if KillBrowserOnce.killed == 0:
            KillBrowserOnce.killed += 1
            os.kill(self.host.browser_pid, signal.SIGKILL)
        return await super().act(obs, ctx)


class Broken:
    name = "broken"

    def reset(self, seed):
        return None

    async def act(self, obs, ctx):
        raise ValueError("agent bug")


async def test_browser_killed_mid_episode_is_retried_and_completes(tmp_path) -> None:
    async with BrowserHost() as host:
        first_pid = host.browser_pid
        runner = EpisodeRunner(
            lambda: KillBrowserOnce(host), RunnerConfig(concurrency=1, progress=False),
            out_dir=tmp_path, host=host,
        )
        [record] = await runner.run(episode_specs(["miniwob:click-test"], 1, seed=5))
        assert host.browser_pid != first_pid and host.is_alive()
    assert record.error is None and record.attempts == 2
    assert record.success and record.reward > 0 and record.steps == 1
    assert [r.attempts for r in read_results(tmp_path / "results.jsonl")] == [2]


async def test_agent_errors_are_recorded_never_retried(browser_host, tmp_path) -> None:
    runner = EpisodeRunner(Broken, RunnerConfig(progress=False, retries=3), out_dir=tmp_path,
                           host=browser_host)
    [record] = await runner.run(episode_specs(["miniwob:click-test"], 1, seed=0))
    assert record.attempts == 1 and record.error == "ValueError: agent bug"


async def test_results_stream_screenshots_callbacks_and_resume(browser_host, tmp_path) -> None:
    seen: list[tuple] = []

    def on_step(ctx, before, action, after, reward, info):
        seen.append((ctx.spec.key, before.step, after.step, reward, info.success))

    config = RunnerConfig(concurrency=2, progress=False)
    specs = episode_specs(["miniwob:click-test", "miniwob:click-button"], 2, seed=10)
    runner = EpisodeRunner(OracleAgent, config, out_dir=tmp_path, host=browser_host, on_step=on_step)
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

    resumed = EpisodeRunner(OracleAgent, config.model_copy(update={"resume": True}),
                            out_dir=tmp_path, host=browser_host)
    assert await resumed.run(specs) == []
    more = episode_specs(["miniwob:click-test", "miniwob:click-button"], 3, seed=10)
    new = await resumed.run(more)
    assert sorted(r.index for r in new) == [2, 2]
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 6


def test_torn_last_line_is_skipped(tmp_path) -> None:
    good = {"task": "miniwob:click-test", "seed": 1, "index": 0, "episode": "e"}
    (tmp_path / "results.jsonl").write_text(json.dumps(good) + "\n" + '{"task": "mini')
    assert [r.key for r in read_results(tmp_path / "results.jsonl")] == [("miniwob:click-test", 1, 0)]
