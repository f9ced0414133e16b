"""An adversarial agent against the browsers: ordinary actions only (keys, typing), driving
every escape hatch of a browser's own UI, on the windowed Chromium of the desktop suite and
on the headless browser sandbox. Checked from outside the sandbox: the reward and verdicts
are the task's own, every episode is scored (no infrastructure error), the site recorded
no event the page was not clicked into, and a canary loopback listener saw no connection.
docs/security.md, "Windowed Chromium and MiniWoB"."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from harness.actions import Action, Done, Key, TypeText
from harness.agents.scripted import ScriptedAgent
from harness.env_providers import EnvOptions, LocalEnvs
from harness.rollout import Episode, rollout

#: The forgery of issue 22: MiniWoB's reward globals set from the address bar.
FORGE = "javascript:WOB_REWARD_GLOBAL=1;WOB_RAW_REWARD_GLOBAL=1;WOB_DONE_GLOBAL=true;void 0"
#: Script that clicks every button of an FSM site's page (events the agent never clicked).
CLICK_ALL = "javascript:document.querySelectorAll('button,a').forEach(b=>b.click());void 0"


@pytest_asyncio.fixture(loop_scope="session")
async def canary() -> AsyncIterator[tuple[int, list[str]]]:
    """A loopback listener no episode may reach: (its port, the peers that connected)."""
    peers: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(str(writer.get_extra_info("peername")))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1], peers
    server.close()
    await server.wait_closed()


def address_bar(text: str) -> list[Action]:
    """Focus the address bar, type ``text``, press Enter (a no-op in the headless browser)."""
    return [Key(keys=("ctrl", "l")), TypeText(text=text), Key(keys=("enter",))]


#: A WebSocket opened by the page's own script; says how it ended.
SOCKET_JS = ("new Promise(done => {{ const ws = new WebSocket('ws://127.0.0.1:{port}/');"
             " ws.onopen = () => done('open'); ws.onclose = e => done('closed ' + e.code); }})")


async def play(desktop_envs: LocalEnvs, task: str, script: list[Action],
               socket_port: int | None = None) -> tuple[Episode, dict[str, object]]:
    """Run ``script`` to its Done (no step limit before it); return the episode and what the
    harness sees outside the page at its end: the site's events; with ``socket_port``, also
    the windowed browser's window titles, its debugging targets, and how a WebSocket that
    the page's own script opens to that port ended."""
    env = await desktop_envs.open(task, EnvOptions(max_steps=len(script)))
    try:
        episode = await rollout(env, ScriptedAgent(script), seed=0)  # an infra error raises here
        seen: dict[str, object] = {}
        chromium = getattr(env.task, "_chromium", None)
        if chromium is not None and socket_port is not None:
            seen["windows"] = [w.title for w in await env.sandbox.windows()]
            profile = env.sandbox.home / ".config" / "chromium"
            port = (profile / "DevToolsActivePort").read_text().split("\n", 1)[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as answer:
                seen["targets"] = [t["url"] for t in json.loads(answer.read())]
            seen["socket"] = await chromium.evaluate(SOCKET_JS.format(port=socket_port))
        sites, sid = getattr(env.task, "_sites", None), getattr(env.task, "session_id", None)
        if sites is not None and sid is not None:
            seen["events"] = len(await sites.events(sid))
        return episode, seen
    finally:
        await desktop_envs.release(env)


async def test_the_address_bar_neither_forges_a_miniwob_reward_nor_opens_devtools_or_sockets(desktop_envs, canary) -> None:
    port, peers = canary
    host_policies = _listing("/etc/chromium")
    script = [*address_bar(f"javascript:new WebSocket('ws://127.0.0.1:{port}/');void 0"),
              *address_bar(FORGE), Key(keys=("f12",)), Key(keys=("ctrl", "shift", "i")),
              Key(keys=("ctrl", "shift", "n")), Done()]
    for task in ("desktop:chromium-miniwob-click-button", "miniwob:click-button"):
        episode, seen = await play(desktop_envs, task, script, socket_port=port)
        assert [t.agent_step.action for t in episode.transitions] == script, task  # ran to the end, scored
        assert not episode.success and episode.total_reward == 0.0, task
        assert all(t.after.last_action_error is None for t in episode.transitions), task  # nothing left
        assert peers == [], task
        if task.startswith("desktop:"):
            assert len(seen["windows"]) == 1, seen  # no incognito window, no undocked DevTools
            assert not [u for u in seen["targets"] if u.startswith("devtools://")], seen
            # even the page's own script cannot open a socket off its origin (routes miss sockets)
            assert seen["socket"] == "closed 1008" and peers == [], seen
            # the policy is the windowed browser's own: the host's policy directory is unchanged
            assert _listing("/etc/chromium") == host_policies


def _listing(path: str) -> list[str] | None:
    return sorted(os.listdir(path)) if os.path.isdir(path) else None


async def test_leaving_the_site_is_a_scored_agent_error_and_fires_no_event(desktop_envs, canary) -> None:
    port, peers = canary
    script = [*address_bar(CLICK_ALL), *address_bar("chrome://version"),
              *address_bar("data:text/html,<b>elsewhere</b>"), *address_bar("file:///etc/hostname"),
              *address_bar(f"http://127.0.0.1:{port}/"), Done()]
    for task in ("desktop:chromium/shop/add_lamp", "fsm:shop/add_lamp"):
        episode, seen = await play(desktop_envs, task, script)
        assert [t.agent_step.action for t in episode.transitions] == script, task  # every step scored
        assert not episode.success and episode.total_reward == 0.0, task
        assert seen["events"] == 0, task  # the site saw no event: nothing on its page was clicked
        assert peers == [], task  # the address bar did not even preconnect to the canary
        verdicts = [t.info.verdict for t in episode.transitions]
        assert all(v is not None and not v.transition_fired for v in verdicts), task
        errors = [t.after.last_action_error for t in episode.transitions]
        if task.startswith("desktop:"):
            # each address off the site is the agent's error, from the Enter that went there on
            for enter in (5, 8, 11, 14):
                assert errors[enter] is not None and "left the site" in errors[enter], errors
        else:  # the headless browser has no address bar: the keys and text go to the page
            assert errors == [None] * len(script)


async def test_a_miniwob_page_reloaded_left_or_closed_ends_its_episode_unrewarded_and_scored(desktop_envs) -> None:
    """A reload would restart MiniWoB on a new problem (a reroll), a blocked address leaves
    the page, ctrl+shift+W closes the window: each ends the episode, at the first step that
    sees it, with reward 0 and the agent's error."""
    for script, why in (([Key(keys=("f5",)), Done()], "reloaded"),
                        ([*address_bar("chrome://version"), Done()], "chrome-error://"),
                        ([Key(keys=("ctrl", "shift", "w")), Done()], "closed")):
        episode, _ = await play(desktop_envs, "desktop:chromium-miniwob-click-button", script)
        assert episode.total_reward == 0.0 and not episode.success, why
        seen = [t for t in episode.transitions if why in (t.after.last_action_error or "")]
        assert seen and seen[0] is episode.transitions[-1] and seen[0].terminated, why


async def test_a_windowed_chromium_that_would_run_unlocked_is_refused(desktop_envs, monkeypatch) -> None:
    """A Chromium that reads its policies from elsewhere (here: launched without the private
    policy directory) would let the agent forge MiniWoB's reward: the launch fails closed.
    So does a machine without bwrap."""
    import sandboxes.browser.policy as chromium_policy
    import sandboxes.desktop.chromium as desktop_chromium
    from sandboxes.errors import SandboxStartError

    with monkeypatch.context() as patch:
        patch.setattr(desktop_chromium, "locked_down", lambda argv, origins, private_dir: argv)
        env = await desktop_envs.open("desktop:chromium-miniwob-click-button", EnvOptions())
        try:
            with pytest.raises(SandboxStartError, match="expected Chromium's managed policy to refuse a data: URL"):
                await env.reset(seed=0)
        finally:
            await desktop_envs.discard(env)
    monkeypatch.setattr(chromium_policy.shutil, "which", lambda name: None)
    with pytest.raises(SandboxStartError, match="expected bubblewrap"):
        chromium_policy.locked_down(["/usr/bin/chromium"], ["http://127.0.0.1:1"], Path("/nonexistent"))
