"""Crash recovery: SIGKILL the Chromium process mid-episode."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from playwright.async_api import Error as PlaywrightError

from sandboxes import procs
from sandboxes.actions import Click
from sandboxes.errors import SandboxCrashed, SandboxError, SandboxTimeout
from sandboxes.providers import LocalProvider
from tests.conftest import wait_until


def leftovers(pgid: int) -> list[procs.ProcInfo]:
    """Processes (zombies included) of a browser's process group still in /proc."""
    return procs.group_members(pgid)


def our_zombies() -> list[procs.ProcInfo]:
    """Chromium zombies parented to this test process (other suites' children are not ours)."""
    me = os.getpid()
    chromium = ("chromium", "chrome", procs.CRASHPAD_COMM)
    return [
        p
        for p in procs.all_procs()
        if p.ppid == me and p.state == "Z" and p.comm.startswith(chromium)
    ]


@pytest.fixture
async def own_host():
    """A host of its own: killing the session's shared browser would disturb other tests."""
    provider = LocalProvider()
    await provider.start()
    yield provider
    await provider.close()


@pytest.mark.parametrize("operation", ["screenshot", "execute", "evaluate"])
async def test_kill_raises_crashed_then_recovers(own_host, static_server, operation):
    sandbox = await own_host.new_browser()
    await sandbox.reset(static_server.url("actions.html"))
    old_pid, old_generation = own_host.host.browser_pid, own_host.host.generation
    old_helpers = own_host.host.crashpad_pids
    assert old_pid is not None and procs.read_proc(old_pid).pgid == old_pid

    os.kill(old_pid, signal.SIGKILL)
    started = time.monotonic()
    calls = {
        "screenshot": sandbox.screenshot,
        "execute": lambda: sandbox.execute(Click(x=10, y=10)),
        "evaluate": lambda: sandbox.evaluate("window.events"),
    }
    with pytest.raises(SandboxCrashed, match="call reset"):
        await calls[operation]()
    assert time.monotonic() - started < 15, "crash detection must not hang"

    # The host restarted the browser before raising.
    assert own_host.host.generation == old_generation + 1
    assert own_host.host.browser_pid not in (None, old_pid) and own_host.host.is_alive()
    # Every process of the dead browser is gone and reaped: no orphans, no zombies.
    assert await wait_until(lambda: not leftovers(old_pid)), leftovers(old_pid)
    assert [procs.read_proc(pid) for pid in old_helpers if procs.read_proc(pid)] == []
    assert our_zombies() == []

    # Until reset, the sandbox keeps saying its episode is gone; after reset it works.
    with pytest.raises(SandboxError):
        await sandbox.screenshot()
    await sandbox.reset(static_server.url("actions.html"))
    assert await sandbox.execute(Click(x=10, y=10)) is None
    assert len(await sandbox.evaluate("window.events")) >= 1
    assert await sandbox.health() is True


async def test_reset_after_unnoticed_crash_restarts(own_host, static_server):
    sandbox = await own_host.new_browser()
    old_pid = own_host.host.browser_pid
    os.kill(old_pid, signal.SIGKILL)
    assert await wait_until(lambda: not own_host.host.is_alive())
    assert await sandbox.health() is False
    await sandbox.reset(static_server.url("storage.html"))
    assert own_host.host.browser_pid != old_pid
    assert await sandbox.evaluate("document.title") == "storage"


async def test_every_sandbox_of_a_crashed_host_raises(own_host, static_server):
    first, second = await own_host.new_browser(), await own_host.new_browser()
    for sandbox in (first, second):
        await sandbox.reset(static_server.url("storage.html"))
    os.kill(own_host.host.browser_pid, signal.SIGKILL)
    with pytest.raises(SandboxCrashed):
        await first.screenshot()
    generation = own_host.host.generation
    # The second sandbox's context died with the old browser; the host restarts only once.
    with pytest.raises(SandboxCrashed):
        await second.screenshot()
    assert own_host.host.generation == generation


async def test_close_leaves_no_processes(static_server):
    provider = LocalProvider()
    sandbox = await provider.new_browser()
    await sandbox.reset(static_server.url("actions.html"))
    pid, helpers = provider.host.browser_pid, provider.host.crashpad_pids
    await provider.close()
    assert await wait_until(lambda: not leftovers(pid)), leftovers(pid)
    assert [procs.read_proc(p) for p in helpers if procs.read_proc(p)] == []
    assert our_zombies() == []


async def test_renderer_crash_raises_crashed_without_restart(own_host, static_server):
    sandbox = await own_host.new_browser()
    await sandbox.reset(static_server.url("storage.html"))
    generation = own_host.host.generation
    session = await sandbox.page.context.new_cdp_session(sandbox.page)
    with pytest.raises((PlaywrightError, TimeoutError)):  # a crashing page never answers
        await asyncio.wait_for(session.send("Page.crash"), 5)
    with pytest.raises(SandboxCrashed, match="renderer"):
        await sandbox.screenshot()
    assert own_host.host.generation == generation  # the browser itself was fine
    await sandbox.reset(static_server.url("storage.html"))
    assert await sandbox.evaluate("document.title") == "storage"


async def test_hung_operation_times_out(provider, static_server):
    sandbox = await provider.new_browser(action_timeout_s=0.5)
    try:
        await sandbox.reset(static_server.url("storage.html"))
        started = time.monotonic()
        with pytest.raises(SandboxTimeout, match="within 0.5s"):
            await sandbox.evaluate("new Promise(() => {})")
        assert time.monotonic() - started < 5
        assert await sandbox.evaluate("document.title") == "storage"  # still usable
    finally:
        await sandbox.close()


async def test_dead_playwright_driver_is_replaced(own_host, static_server):
    sandbox = await own_host.new_browser()
    await sandbox.reset(static_server.url("storage.html"))
    old_pid = own_host.host.browser_pid
    driver = procs.read_proc(old_pid).ppid
    assert driver != os.getpid()
    # Earlier tests' orphans that this process adopted may wait, as zombies, for their own
    # host's shut-down to reap them (the suite runs files one after another in a worker):
    # not this host's doing.
    earlier = {p.pid for p in our_zombies()}
    os.kill(driver, signal.SIGKILL)
    with pytest.raises(SandboxCrashed):
        await sandbox.screenshot()
    await sandbox.reset(static_server.url("storage.html"))
    assert await sandbox.evaluate("document.title") == "storage"
    assert await wait_until(lambda: not leftovers(old_pid)), leftovers(old_pid)
    assert [p for p in our_zombies() if p.pid not in earlier] == []
