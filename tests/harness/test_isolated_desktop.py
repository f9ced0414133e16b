"""Isolated desktops: Xvfb, openbox and the apps in the sandbox's jail, real Tk app and xterm."""

from __future__ import annotations

import json
import socket
import sys

from harness.agents.registry import make_agent
from harness.isolated_envs import IsolatedEnvs
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from sandboxes import procs
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.leftovers import leftovers
from tests.conftest import wait_until

TASKS = ["desktop:tk-settings-password", "desktop:xterm-write-file"]

# A program run in the jail: try each (host, port), write what happened to a file.
PROBE = """
import json, socket, sys
out = {}
for name, host, port in json.loads(sys.argv[1]):
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, port)); out[name] = "ok"
    except OSError as exc:
        out[name] = "failed: " + type(exc).__name__
    finally:
        s.close()
open(sys.argv[2], "w").write(json.dumps(out))
"""


async def test_an_isolated_desktop_runs_tk_and_xterm_oracles_and_leaves_nothing() -> None:
    before = leftovers()
    config = RunnerConfig(concurrency=1, provider="isolated", progress=False, save_screenshots=False)
    records = await EpisodeRunner(make_agent("oracle"), config).run(episode_specs(TASKS, 1, 0))
    assert [(r.task, r.success, r.error) for r in records] == [(t, True, None) for t in TASKS]
    after = leftovers()
    for kind in ("namespaces", "service_addresses", "homes", "cgroups", "display_links"):
        assert set(getattr(after, kind)) <= set(getattr(before, kind)), after
    # By pid: "pid comm state" of the session's own browser changes with its state (S, R).
    assert {p.split()[0] for p in after.processes} <= {p.split()[0] for p in before.processes}, after


async def test_inside_an_isolated_desktop_only_granted_ports_answer() -> None:
    envs = IsolatedEnvs()
    listener = socket.socket()
    try:
        await envs.start()
        sandbox = await envs.sandboxes.new_desktop()
        assert isinstance(sandbox, DesktopSandbox) and sandbox.jail is not None
        address = envs.sandboxes.service_address
        listener.bind((address, 0))  # a server on the service address, its port not granted
        listener.listen()
        sites = await envs.resources.sites()  # type: ignore[union-attr]
        site_port = int(sites.site_url.rsplit(":", 1)[1].split("/")[0])
        targets = [("site", address, site_port), ("ungranted", address, listener.getsockname()[1]),
                   ("outside", "1.1.1.1", 80)]
        out = sandbox.home / "probe.json"
        sandbox.launch([sys.executable, "-c", PROBE, json.dumps(targets), str(out)])
        assert await wait_until(out.exists, timeout=20)
        inside = json.loads(out.read_text())
        for _, host, port in targets[:2]:  # the control: the host reaches both ports
            with socket.create_connection((host, port), timeout=3):
                pass
        jailed = sandbox.jail.pids()
        comms = {info.comm for pid in jailed if (info := procs.read_proc(pid)) is not None}
        assert {"Xvfb", "openbox"} <= comms, comms  # the display runs in the jail's cgroup
        await sandbox.close()
        assert not any(procs.is_alive(pid) for pid in jailed)
    finally:
        listener.close()
        await envs.close()
    assert inside["site"] == "ok", inside
    assert inside["ungranted"].startswith("failed"), inside
    assert inside["outside"].startswith("failed"), inside
