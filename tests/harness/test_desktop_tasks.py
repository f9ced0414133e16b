"""The `desktop` suite on real Xvfb, xterm, Chromium and the Tk app: the oracle agent solves
every task through the screen (the FSM tasks with the site's own step verdicts), `cua eval`
reaches success 1.0, and the evaluators refuse what does not meet the goal."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import secrets
import sys
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from fsm_sites.serving.client import SiteClient
from harness.actions import Done, TypeText
from harness.agents.oracle import OracleAgent
from harness.env_providers import EnvOptions
from harness.errors import TaskError
from harness.rollout import rollout
from harness.tasks.base import PageReader
from harness.tasks.desktop import SHELL_GOALS, task_names
from harness.tasks.desktop_fsm import ChromiumFSMTask
from harness.tasks.registry import make_task, suite_task_ids
from sandboxes.procs import is_alive, read_proc
from tests.harness.test_eval import _app


def test_the_suite_has_ten_tasks_across_three_apps_each_with_an_oracle() -> None:
    names = suite_task_ids("desktop")
    assert len(names) >= 10 and names == [f"desktop:{n}" for n in task_names()]
    for app in ("xterm-", "tk-", "chromium-"):
        assert sum(n.startswith(f"desktop:{app}") for n in names) >= 2
    assert all(getattr(make_task(n), "has_oracle", False) for n in names)
    assert make_task("desktop:tk/bank/open_savings").id == "desktop:tk/bank/open_savings"


async def test_oracle_solves_fsm_goals_in_tk_with_the_sites_verdicts(desktop_envs) -> None:
    env = await desktop_envs.open("desktop:tk-settings-password", EnvOptions())
    try:
        episode = await rollout(env, OracleAgent(), seed=1)
    finally:
        await desktop_envs.release(env)
    assert episode.success and episode.terminated
    verdicts = [t.info.verdict for t in episode.transitions]
    assert all(v is not None for v in verdicts)
    fired = [v for v in verdicts if v is not None and v.transition_fired]
    assert len(fired) == 6 and all(v.on_shortest_path for v in fired)  # the goal is 6 transitions away
    typed = [t.agent_step.action for t in episode.transitions if isinstance(t.agent_step.action, TypeText)]
    assert [a.text for a in typed] == ["hunter2", "Correct-Horse-9"]


async def test_the_tk_app_starts_for_a_session_id_that_reads_as_an_option(desktop_envs, monkeypatch) -> None:
    """Session ids come from token_urlsafe, whose alphabet has "-": one in 64 begins with it,
    and the app's command line must not take such an id for an option."""
    token = secrets.token_urlsafe
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n: "-" + token(n))
    env = await desktop_envs.open("desktop:tk/shop/account_signout", EnvOptions())
    try:
        episode = await rollout(env, OracleAgent(), seed=1)
        session = env.task.session_id
    finally:
        await desktop_envs.release(env)
    assert episode.success and session is not None and session.startswith("-")


async def test_a_tk_app_that_exits_is_reported_with_its_output(desktop_envs, monkeypatch, tmp_path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no Tk here' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    env = await desktop_envs.open("desktop:tk/shop/account_signout", EnvOptions())
    try:
        with pytest.raises(TaskError, match=r"got its exit \(code 3\); its output: 'no Tk here"):
            await env.reset(seed=0)
    finally:
        await desktop_envs.release(env)


async def test_xterm_evaluator_refuses_wrong_content_and_early_done(desktop_envs) -> None:
    env = await desktop_envs.open("desktop:xterm-write-file", EnvOptions())
    try:
        obs, _ = await env.reset(seed=0)
        assert "holding exactly one line" in obs.instruction
        _, reward, terminated, _, info = await env.step(TypeText(text="echo wrong > notes.txt\n"))
        assert reward == 0.0 and not info.success and not terminated
        _, reward, terminated, _, info = await env.step(Done())
        assert terminated and not info.success and reward == 0.0
    finally:
        await desktop_envs.release(env)


async def test_xterm_reset_shows_the_drawn_prompt_however_late_the_shell_starts(desktop_envs, monkeypatch) -> None:
    # A loaded machine starts the shell late; here its ~/.bashrc sleeps in the second episode
    # (that sleep is the slow shell, not a wait): both seeded resets must show the same screen.
    goal = SHELL_GOALS["xterm-write-file"]
    bashrcs = iter(["", "sleep 0.5\n"])

    def prepare(home: Path, rng: random.Random) -> dict[str, str]:
        (home / ".bashrc").write_text(next(bashrcs), encoding="utf-8")
        return goal.prepare(home, rng)

    monkeypatch.setitem(SHELL_GOALS, "xterm-write-file", dataclasses.replace(goal, prepare=prepare))
    env = await desktop_envs.open("desktop:xterm-write-file", EnvOptions())
    try:
        fast, _ = await env.reset(seed=0)
        slow, _ = await env.reset(seed=0)
        assert fast.image().tobytes() == slow.image().tobytes(), "a late shell's reset showed another screen"
        (window,) = await env.sandbox.windows()
        assert window.title == "xterm" and window.icon_name == "xterm prompt 1" and window.focused
    finally:
        await desktop_envs.release(env)


async def test_an_xterm_step_returns_once_the_command_ended_and_its_prompt_is_drawn(desktop_envs) -> None:
    env = await desktop_envs.open("desktop:xterm-write-file", EnvOptions())
    try:
        await env.reset(seed=0)
        (command,) = env.task.goal.commands(env.task.fields)
        # the file is right at once; the command ends (and the next prompt is drawn) later
        _, reward, terminated, _, _ = await env.step(TypeText(text=command + "; sleep 0.5\n"))
        assert reward == 1.0 and terminated
        running = {proc.comm for proc in map(read_proc, env.sandbox.app_pids()) if proc is not None}
        assert "bash" in running and "sleep" not in running
        (window,) = await env.sandbox.windows()
        assert window.icon_name == "xterm prompt 2"
    finally:
        await desktop_envs.release(env)


# A page still drawing once it shows the session's state, as Chromium's own window is while its
# tab strip animates the new tab: a square that changes colour every frame for ~0.3 s, then goes.
_LATE_DRAWING = """(() => { const square = document.createElement("div"); let frame = 0;
  square.style.cssText = "position:fixed;left:0;top:0;width:40px;height:40px;z-index:99";
  document.body.appendChild(square);
  window.__drawn = new Promise(done => { const draw = () => {
    if (++frame > 18) { square.remove(); done(true); return; }
    square.style.background = `hsl(${frame * 20}, 90%, 50%)`; requestAnimationFrame(draw); };
    requestAnimationFrame(draw); });
  return true; })()"""


async def test_a_chromium_fsm_reset_shows_the_window_once_it_stopped_drawing(desktop_envs, monkeypatch) -> None:
    page_settle = ChromiumFSMTask._settle

    async def settle_then_keep_drawing(self: ChromiumFSMTask, browser: PageReader, sites: SiteClient, sid: str,
                                       marker: str | None = None) -> None:
        await page_settle(self, browser, sites, sid, marker)
        await browser.evaluate(_LATE_DRAWING)

    monkeypatch.setattr(ChromiumFSMTask, "_settle", settle_then_keep_drawing)
    env = await desktop_envs.open("desktop:chromium-settings-cfg_both", EnvOptions())
    try:
        obs, _ = await env.reset(seed=0)
        assert await env.task._require_chromium().evaluate("window.__drawn") is True
        await env.sandbox.settle()
        quiet = Image.open(io.BytesIO((await env.sandbox.screenshot()).data))
        assert obs.image().convert("RGB").tobytes() == quiet.convert("RGB").tobytes(), \
            "the reset's screenshot caught the window mid-drawing"
    finally:
        await desktop_envs.release(env)


def test_cua_eval_oracle_solves_every_desktop_task(tmp_path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(_app(), ["eval", "--suite", "desktop", "--agent", "oracle", "--concurrency", "2",
                                         "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == len(task_names()) and summary["success_rate"] == 1.0, summary
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    fsm = [r for r in records if "-miniwob-" not in r["task"] and not r["task"].startswith("desktop:xterm")]
    assert fsm and all(step["verdict"] for r in fsm for step in r["trajectory"])


async def test_reset_after_a_chromium_episode_leaves_no_browser_process(desktop_envs) -> None:
    env = await desktop_envs.open("desktop:chromium-miniwob-click-button", EnvOptions())
    try:
        await env.reset(seed=0)
        desktop = env.sandbox
        browser = desktop.app_pids()
        assert len(browser) >= 3  # the browser, its zygote, renderers
        await desktop.reset()
        assert desktop.app_pids() == set() and not [pid for pid in browser if is_alive(pid)]
        assert list(desktop.home.iterdir()) == []  # the profile went with the old home
    finally:
        await desktop_envs.release(env)
