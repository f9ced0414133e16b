"""`--provider isolated`: real Chromium in real jails, against the run's real site server."""

from __future__ import annotations

import json
import os
import signal

import pytest

from harness.agents.registry import make_agent
from harness.env_providers import EnvOptions, ProviderContext, make_env_provider
from harness.errors import ConfigError
from harness.isolated_envs import IsolatedEnvs
from harness.resources import TaskResources
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from sandboxes import procs
from sandboxes.base import SandboxRequest
from sandboxes.isolated import IsolatedBrowser, IsolatedProvider
from sandboxes.leftovers import leftovers
from tests.conftest import wait_until

TASK = "fsm:shop/open_mug"


async def _fetch_all(sandbox, start_url: str, targets: dict[str, str]) -> dict[str, str]:
    """Fetch each target from the page (no-cors: any response counts, only a network
    error fails); every target's origin is allowed, so only the network can stop it."""
    origins = tuple(dict.fromkeys("/".join(url.split("/")[:3]) for url in targets.values()))
    await sandbox.reset(start_url, allowed_origins=origins)
    results = {}
    for name, url in targets.items():
        results[name] = await sandbox.evaluate(
            f"fetch({json.dumps(url)}, {{mode: 'no-cors', cache: 'no-store'}})"
            ".then(() => 'ok', e => 'failed: ' + e.message)")
    return results


async def test_an_isolated_browser_reaches_its_site_and_nothing_else(provider, static_server) -> None:
    envs = IsolatedEnvs()
    try:
        env = await envs.open(TASK, EnvOptions())
        await env.reset(seed=0)
        assert isinstance(env.sandbox, IsolatedBrowser)
        sites = await envs.resources.sites()
        targets = {
            "site": sites.site_url + "/",
            "control_port": sites.server.control_url + "/",  # same address, not granted
            "host_loopback": static_server.url("actions.html"),
            "outside": "http://1.1.1.1/",
        }
        inside = await _fetch_all(env.sandbox, sites.site_url + "/", targets)
        # The control: a browser on the host reaches every server.
        local = await provider.new_browser()
        try:
            host_view = await _fetch_all(local, sites.site_url + "/", targets)
        finally:
            await local.close()
        profile = [n for n in os.listdir(env.sandbox.jail.tmp) if "profile" in n]
        await envs.release(env)
    finally:
        await envs.close()
    assert host_view["site"] == host_view["control_port"] == host_view["host_loopback"] == "ok"
    assert inside["site"] == "ok"
    assert inside["control_port"].startswith("failed"), inside
    assert inside["host_loopback"].startswith("failed"), inside
    assert inside["outside"].startswith("failed"), inside
    assert profile, "expected Chromium's profile in the jail's own /tmp"


async def test_an_isolated_eval_matches_a_local_one_and_leaves_nothing() -> None:
    before = leftovers()
    runs = {}
    for name in ("local", "isolated"):
        config = RunnerConfig(concurrency=2, provider=name, progress=False, save_screenshots=False)
        records = await EpisodeRunner(make_agent("oracle"), config).run(episode_specs([TASK], 3, 0))
        runs[name] = sorted((r.seed, r.success, r.steps, r.error) for r in records)
    assert runs["isolated"] == runs["local"]
    assert all(success and error is None for _, success, _, error in runs["isolated"])
    after = leftovers()
    assert after.empty(processes=False), after
    new = {p.split()[0] for p in after.processes} - {p.split()[0] for p in before.processes}
    assert not new, after.processes


async def test_an_isolated_sandbox_ends_when_its_driver_dies() -> None:
    """Playwright's driver dies without closing the browser: the jail goes with it."""
    provider = IsolatedProvider()
    try:
        sandbox = await provider.new_sandbox(SandboxRequest(viewport=(320, 240)))
        assert isinstance(sandbox, IsolatedBrowser)
        await sandbox.reset()
        inside = sandbox.jail.pids()
        comms = {info.comm for pid in inside if (info := procs.read_proc(pid)) is not None}
        assert "chromium" in comms and "bwrap" in comms, comms
        driver = sandbox.host._driver_pid
        assert driver is not None and driver not in inside  # the driver stays outside
        os.kill(driver, signal.SIGKILL)
        assert await wait_until(lambda: not sandbox.jail.pids(), timeout=15), sandbox.jail.pids()
        await sandbox.close()
    finally:
        await provider.close()
    assert leftovers().empty(processes=False)


def test_the_registry_makes_isolated_envs_and_refuses_shared_resources() -> None:
    assert isinstance(make_env_provider("isolated"), IsolatedEnvs)
    assert RunnerConfig(provider="isolated").provider == "isolated"
    with pytest.raises(ConfigError, match="service address"):
        make_env_provider("isolated", ProviderContext(resources=TaskResources()))
    with pytest.raises(ConfigError, match="without an argument"):
        make_env_provider("isolated:x")


class Sandbox:
    """A sandbox at the seam: its close records itself, or fails."""

    def __init__(self, closed: list[str], name: str, fail: bool = False) -> None:
        self.closed, self.name, self.fail, self.jail = closed, name, fail, None

    async def close(self) -> None:
        self.closed.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} would not close")


async def test_a_sandbox_that_fails_to_close_does_not_keep_the_others_or_the_address() -> None:
    provider = IsolatedProvider()
    await provider.start()
    address, closed = provider.service_address, []
    provider._sandboxes.update({Sandbox(closed, "a", fail=True), Sandbox(closed, "b")})  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="would not close"):
        await provider.close()
    assert sorted(closed) == ["a", "b"]
    assert address not in leftovers().service_addresses
