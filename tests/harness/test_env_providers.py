"""Env providers: the registry, and local envs reusing (or dropping) their sandboxes."""

from __future__ import annotations

import pytest

from harness.env import Env
from harness.env_providers import (
    EnvOptions,
    LocalEnvs,
    UnknownProviderError,
    check_sandbox,
    make_env_provider,
    register_env_provider,
    sandbox_request,
)
from harness.errors import ConfigError
from harness.runner import RunnerConfig
from harness.tasks.registry import make_task
from sandboxes.base import SandboxRequest
from sandboxes.isolated import IsolatedProvider


async def test_local_envs_reuse_a_released_sandbox_and_drop_a_discarded_one(provider) -> None:
    envs = LocalEnvs(provider)
    options = EnvOptions(max_steps=3)
    try:
        first = await envs.open("miniwob:click-test", options)
        assert isinstance(first, Env) and first.task_id == "miniwob:click-test"
        await first.reset(seed=0)
        sandbox = first.sandbox
        await envs.release(first)
        second = await envs.open("miniwob:click-button", options)  # same viewport: same sandbox
        assert second.sandbox is sandbox
        other = await envs.open("fsm:shop/open_mug", options)  # another request: a new one
        assert other.sandbox is not sandbox
        await envs.discard(second)
        assert not await sandbox.health()  # closed, never handed out again
        third = await envs.open("miniwob:click-test", options)
        assert third.sandbox is not sandbox
        await envs.release(third)
        await envs.release(other)
    finally:
        await envs.close()


class BrowserOnly:
    """A sandbox provider's ``kinds``, all ``sandbox_request`` reads (every real provider
    here makes both kinds)."""

    kinds = ("browser",)


async def test_sandbox_kind_overrides_the_task_s_and_is_refused_where_not_made(provider) -> None:
    envs = LocalEnvs(provider)
    try:
        env = await envs.open("miniwob:click-test", EnvOptions(sandbox="browser"))
        assert env.sandbox.kind == "browser"
        await envs.release(env)
    finally:
        await envs.close()
    assert sandbox_request(SandboxRequest(), "desktop", IsolatedProvider()).kind == "desktop"
    with pytest.raises(ConfigError, match=r"BrowserOnly makes \(browser\), got 'desktop'"):
        sandbox_request(SandboxRequest(), "desktop", BrowserOnly())
    with pytest.raises(ConfigError, match=r"--sandbox desktop: .* 1 that need another kind "
                                          r"\(miniwob:click-test\)"):
        check_sandbox("desktop", "local", {"miniwob:click-test": "browser", "desktop:x": "desktop"})
    check_sandbox("desktop", "local", {"desktop:x": "desktop"})  # the local provider makes it
    with pytest.raises(ValueError, match="sandbox"):
        RunnerConfig(sandbox="phone")


async def test_viewport_overrides_the_task_s(provider) -> None:
    """An FSM task asks for its own viewport (desktop, or the one its name ends in);
    ``--viewport`` (EnvOptions.viewport) overrides it for every task of a run."""
    assert make_task("fsm:shop/open_mug").sandbox_request.viewport == (1280, 800)
    assert make_task("fsm:shop/open_mug@phone").sandbox_request.viewport == (390, 844)
    request = make_task("miniwob:click-test").sandbox_request
    assert sandbox_request(request, None, provider, viewport=(700, 500)).viewport == (700, 500)
    assert RunnerConfig(viewport="tablet").viewport_size == (768, 1024)
    assert RunnerConfig(viewport="1280x720").viewport_size == (1280, 720)
    with pytest.raises(ValueError, match=r"expected WIDTHxHEIGHT .* got '12x'"):
        RunnerConfig(viewport="12x")
    envs = LocalEnvs(provider)
    try:
        phone = await envs.open("fsm:shop/open_mug@phone", EnvOptions())
        obs, _ = await phone.reset(seed=0)
        assert (obs.width, obs.height) == (390, 844)
        wide = await envs.open("fsm:shop/open_mug@phone", EnvOptions(viewport=(1366, 768)))
        obs, _ = await wide.reset(seed=0)
        assert (obs.width, obs.height) == (1366, 768)
        await envs.release(phone)
        await envs.release(wide)
    finally:
        await envs.close()


def test_the_registry_names_providers_and_offers_close_names() -> None:
    with pytest.raises(UnknownProviderError, match="did you mean 'local'"):
        make_env_provider("locl")
    with pytest.raises(ConfigError, match="without an argument"):
        make_env_provider("local:x")
    with pytest.raises(ConfigError, match="module:function"):
        register_env_provider("bad", "nocolon")
    with pytest.raises(ValueError, match="provider"):
        RunnerConfig(provider="dokcer")
    assert isinstance(make_env_provider("local"), LocalEnvs)


async def test_local_envs_replace_a_sandbox_after_its_episodes(provider) -> None:
    envs = LocalEnvs(provider, sandbox_episodes=2)
    options = EnvOptions(max_steps=3)
    try:
        first = await envs.open("miniwob:click-test", options)
        await first.reset(seed=0)
        sandbox = first.sandbox
        await envs.release(first)
        second = await envs.open("miniwob:click-test", options)
        assert second.sandbox is sandbox  # one episode served: reused
        await second.reset(seed=1)
        assert await sandbox.health()
        await envs.release(second)  # two served: closed
        assert not await sandbox.health()
        third = await envs.open("miniwob:click-test", options)
        assert third.sandbox is not sandbox
        await envs.release(third)
    finally:
        await envs.close()
