"""`--provider isolated`: local envs whose sandboxes each run in a jail of their own.

``IsolatedEnvs`` is ``LocalEnvs`` over a ``sandboxes.isolated.IsolatedProvider``, with the
run's ``TaskResources`` bound to the provider's service address: the FSM site server and
the MiniWoB page server listen there, and their agent-facing ports (the site app and the
page server, never the site server's control app) are the only ports a sandbox's
network namespace may reach, desktop sandboxes included (their Tk FSM app talks to the
site app, as a page does; docs/security.md). Every sandbox has its own Chromium,
temporary home, cgroup and rlimits (``sandboxes.isolation.jail``); closing the provider ends
all of them.

Sandboxes are reused between episodes like local ones; ``sandbox_episodes`` (200 by
default) closes a sandbox (its Chromium and its jail) after that many episodes and makes a
fresh one, because a long-lived Chromium's memory creeps up (about 12% over 450 FSM
episodes here; see BENCHMARKS.md), while a launch costs a second or two.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from harness.env import Env
from harness.env_providers import EnvOptions, LocalEnvs, ProviderContext
from harness.errors import ConfigError
from harness.resources import TaskResources
from sandboxes.browser.config import BrowserConfig
from sandboxes.isolated import IsolatedProvider
from sandboxes.isolation.jail import IsolationConfig


class IsolatedEnvs:
    """Envs over isolated sandboxes, with the run's servers on their service address."""

    def __init__(self, isolation: IsolationConfig | None = None,
                 browser: BrowserConfig | None = None, *,
                 sandbox_episodes: int | None = 200) -> None:
        self.sandboxes = IsolatedProvider(browser, isolation)
        self.sandbox_episodes = sandbox_episodes
        self.resources: TaskResources | None = None
        self._envs: LocalEnvs | None = None

    async def start(self) -> None:
        """Add the service address, start the servers there and grant their ports."""
        await self.sandboxes.start()
        if self._envs is not None:
            return
        resources = TaskResources(bind_host=self.sandboxes.service_address)
        try:
            self.sandboxes.grant(await agent_facing_ports(resources))
        except BaseException:
            await resources.close()
            raise
        self.resources = resources
        self._envs = LocalEnvs(self.sandboxes, resources=resources,
                               sandbox_episodes=self.sandbox_episodes)

    async def open(self, task_id: str, options: EnvOptions) -> Env:
        await self.start()
        assert self._envs is not None
        return await self._envs.open(task_id, options)

    async def release(self, env: Env) -> None:
        assert self._envs is not None
        await self._envs.release(env)

    async def discard(self, env: Env) -> None:
        assert self._envs is not None
        await self._envs.discard(env)

    async def close(self) -> None:
        """Close the sandboxes (every jail), the servers and the service address."""
        try:
            if self._envs is not None:
                await self._envs.close()
            if self.resources is not None:
                await self.resources.close()
        finally:
            await self.sandboxes.close()


async def agent_facing_ports(resources: TaskResources) -> list[int]:
    """The ports a sandbox needs: the FSM site app and the MiniWoB page server (the site
    server's control app stays out of reach)."""
    sites = await resources.sites()
    urls = [sites.site_url, await resources.miniwob_url()]
    ports = [urlsplit(url).port for url in urls]
    return [port for port in ports if port is not None]


def isolated(arg: str | None, context: ProviderContext) -> IsolatedEnvs:
    """The registry's entry for ``isolated``."""
    if arg:
        raise ConfigError(f"expected --provider isolated without an argument, got isolated:{arg}")
    if context.resources is not None:
        raise ConfigError("expected no shared TaskResources for --provider isolated, got some; "
                          "its servers must bind the sandboxes' service address, so it makes its own")
    return IsolatedEnvs()
