"""From inside an isolated desktop jail (`--provider isolated`, real bubblewrap and network
namespace, real Tk app), a process the agent could start (as from its xterm) cannot jump
its session, read another episode's session or replace a site; the jail's processes hold
no token; and the episode then scores exactly as the oracle plays it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.env_providers import EnvOptions
from harness.isolated_envs import IsolatedEnvs
from sandboxes.desktop.sandbox import DesktopSandbox
from tests.conftest import wait_until
from tests.security.test_control_api import goal_state

pytestmark = pytest.mark.asyncio(loop_scope="session")

TASK = "desktop:tk-settings-password"

# Each (name, method, url, body): the HTTP status it got, or the error that stopped it.
PROBE = """
import json, sys, urllib.request
out = {}
for name, method, url, body in json.loads(sys.argv[1]):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            out[name] = response.status
    except urllib.error.HTTPError as exc:
        out[name] = exc.code
    except OSError as exc:
        out[name] = "failed: " + type(exc).__name__
open(sys.argv[2], "w").write(json.dumps(out))
"""


def _tokens_in_processes(pids: list[int], tokens: tuple[str, ...]) -> list[str]:
    """Where a jail process's command line or environment holds one of ``tokens``."""
    found = []
    for pid in pids:
        for part in ("cmdline", "environ"):
            try:
                text = Path(f"/proc/{pid}/{part}").read_bytes().decode(errors="replace")
            except OSError:
                continue  # ended meanwhile
            found += [f"{pid}/{part}" for token in tokens if token in text]
    return found


async def test_a_process_in_the_jail_cannot_jump_read_or_replace_and_the_episode_scores() -> None:
    envs = IsolatedEnvs()
    try:
        env = await envs.open(TASK, EnvOptions())
        await env.reset(seed=0)
        sandbox, task = env.sandbox, env.task
        assert isinstance(sandbox, DesktopSandbox) and sandbox.jail is not None
        server = (await envs.resources.sites()).server  # type: ignore[union-attr]
        sid = task.session_id
        session = server.store.get(sid)
        other = server.create_session(session.site, goal=session.goal)  # another episode's
        goal = goal_state(server, session.site, session.goal)
        machine, start, seq = server.store.machines[session.site], session.state, session.seq
        spec = machine.spec.model_copy(update={"title": "Replaced"}).model_dump(mode="json")
        ctl, site = server.control_url, server.site_url
        attempts = [
            ("jump", "POST", f"{ctl}/sessions/{sid}/jump", {"state": goal}),
            ("read_other", "GET", f"{ctl}/sessions/{other.id}", None),
            ("replace_site", "POST", f"{ctl}/sites", {"spec": spec}),
            ("page_jump", "POST", f"{site}/s/{sid}/jump", {"state": goal}),
            ("page_sites", "POST", f"{site}/sites", {"spec": spec}),
            ("page_view", "GET", f"{site}/s/{sid}/view", None),  # the control: the page's own path
        ]
        out = sandbox.home / "probe.json"
        sandbox.launch([sys.executable, "-c", PROBE, json.dumps(attempts), str(out)])
        assert await wait_until(out.exists, timeout=30)
        inside = json.loads(out.read_text())
        tokens = (server.admin_token, session.token, other.token)
        assert _tokens_in_processes(sandbox.jail.pids(), tokens) == []

        assert inside.pop("page_view") == 200, inside
        assert all(not (isinstance(v, int) and v < 300) for v in inside.values()), inside
        assert str(inside["jump"]).startswith("failed"), inside  # the control port is not granted
        assert server.store.get(sid).state == start and session.seq == seq
        assert server.store.machines[session.site] is machine and other.seq == 0

        rewards, info = [], None
        for _ in range(12):
            _, reward, terminated, _, info = await env.step(await env.oracle_action())
            rewards.append(reward)
            if terminated:
                break
        assert info is not None and info.success and info.verdict.goal_reached
        assert rewards[-1] == 1.0 and set(rewards[:-1]) <= {0.0}
        server.delete_session(other.id)
        await envs.release(env)
    finally:
        await envs.close()
