"""The in-process systems that ``bench_env`` compares, behind one small interface.

- ``FloorVariant``: the floor, a bare Playwright + CDP loop (one Chromium, one context per
  env) that starts a MiniWoB episode and then does only click + screenshot
  (``common.capture``, with the harness variant's capture settings).
- ``HarnessVariant``: this project's ``AsyncEnv`` + ``BrowserSandbox`` (from a
  ``LocalProvider``) + ``MiniWoBTask``.
- ``MiniwobGymVariant``: the ``miniwob`` package's own gymnasium env (Selenium driving
  Debian's chromedriver), one Chromium per env, its blocking calls run on threads.

BrowserGym runs in its own virtualenv (it pins Playwright 1.44); see ``browsergym_runner``.
Every variant loads the same pages from the same local server (the benchmark's one
``TaskResources``, whose ``miniwob_url`` serves the ``miniwob`` package's pages on the
benchmark's event loop; the Selenium and BrowserGym envs block on threads or run in
subprocesses, so that loop is free to serve them), starts episodes with the same seeds, and
clicks the same points of the 160x210 task area.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from benchmarks.common import capture
from harness.resources import TaskResources
from harness.tasks.miniwob import VIEWPORT
from sandboxes.browser.config import BrowserConfig

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
# The harness variant's sandbox settings; the floors capture with the same ones.
CAPTURE_CONFIG = BrowserConfig(image_format="png")

_READY = ("(() => { try { return typeof core !== 'undefined' && typeof genProblem === 'function'"
          " && document.getElementById('sync-task-cover') !== null; } catch (e) { return false; } })()")


class Variant:
    """N envs of one system on one MiniWoB task, loading pages from ``resources``."""

    name = ""
    label = ""

    def __init__(self, resources: TaskResources) -> None:
        self.resources = resources

    async def task_url(self, task: str) -> str:
        return f"{await self.resources.miniwob_url()}miniwob/{task}.html"

    async def open(self, task: str, n: int) -> None:
        raise NotImplementedError

    async def reset(self, i: int, seed: int) -> None:
        raise NotImplementedError

    async def step(self, i: int, x: int, y: int) -> bool:
        """Click (x, y) in task-area pixels and observe; True if the episode ended."""
        raise NotImplementedError

    async def disarm(self, i: int) -> None:
        """Stop MiniWoB's 10 s episode timer (``core.clearTimer()``, as BrowserGym does), so
        a slow system does not see its episodes expire mid-measurement. Not timed."""
        raise NotImplementedError

    async def settle(self) -> None:
        """Wait for background work the env does between episodes (none by default)."""

    def memory_roots(self) -> list[int]:
        """Pids whose descendants are this variant's browsers and drivers."""
        return [os.getpid()]

    async def close(self) -> None:
        raise NotImplementedError


class FloorVariant(Variant):
    name, label = "floor", "(a) floor: bare Playwright+CDP"

    async def open(self, task: str, n: int) -> None:
        from playwright.async_api import async_playwright

        from sandboxes.browser.chromium import CHROMIUM_FLAGS, find_chromium

        self.url = await self.task_url(task)
        self._pw = await async_playwright().start()
        self._browser = await self._pw.chromium.launch(
            executable_path=find_chromium(), headless=True, args=list(CHROMIUM_FLAGS))
        self._envs: list[Any] = [None] * n

    async def reset(self, i: int, seed: int) -> None:
        if self._envs[i] is not None:
            await self._envs[i][0].close()
        context = await self._browser.new_context(
            viewport={"width": VIEWPORT[0], "height": VIEWPORT[1]}, device_scale_factor=1)
        page = await context.new_page()
        cdp = await context.new_cdp_session(page)
        self._envs[i] = (context, page, cdp)
        await page.goto(self.url, wait_until="domcontentloaded")
        while not await page.evaluate(_READY):
            await asyncio.sleep(0.02)
        await page.evaluate(f"Math.seedrandom({json.dumps(seed)}); core.setDataMode('train');"
                            " core.startEpisodeReal();")
        while not await page.evaluate("WOB_TASK_READY === true"):
            await asyncio.sleep(0.02)
        await capture(cdp, CAPTURE_CONFIG)

    async def step(self, i: int, x: int, y: int) -> bool:
        _, page, cdp = self._envs[i]
        await page.mouse.click(x, y)
        await capture(cdp, CAPTURE_CONFIG)
        return False  # the floor judges nothing

    async def disarm(self, i: int) -> None:
        await self._envs[i][1].evaluate("core.clearTimer()")

    async def close(self) -> None:
        await self._browser.close()
        await self._pw.stop()


class JudgedFloorVariant(FloorVariant):
    """The floor plus the one thing any MiniWoB env must add per step: reading the
    reward globals (one ``page.evaluate``). The gap between (a) and (a+) is the price
    of judging; the gap between (a+) and (b) is the env's own overhead."""

    name, label = "floor-judged", "(a+) floor + reward read"

    async def step(self, i: int, x: int, y: int) -> bool:
        _, page, cdp = self._envs[i]
        await page.mouse.click(x, y)
        done = await page.evaluate("WOB_DONE_GLOBAL")
        await capture(cdp, CAPTURE_CONFIG)
        return bool(done)


class HarnessVariant(Variant):
    name, label = "harness", "(b) this env: AsyncEnv"

    async def open(self, task: str, n: int) -> None:
        from harness.env import AsyncEnv
        from harness.tasks.miniwob import MiniWoBTask
        from sandboxes.providers import LocalProvider

        self._provider = LocalProvider(CAPTURE_CONFIG)
        await self._provider.start()
        self._envs = []
        for _ in range(n):
            mw_task = MiniWoBTask(task)
            sandbox = await self._provider.new_sandbox(mw_task.sandbox_request)
            self._envs.append(AsyncEnv(mw_task, sandbox, resources=self.resources,
                                       max_steps=1_000_000))

    async def reset(self, i: int, seed: int) -> None:
        await self._envs[i].reset(seed=seed)

    async def step(self, i: int, x: int, y: int) -> bool:
        from harness.actions import Click

        _, _, terminated, truncated, _ = await self._envs[i].step(Click(x=x, y=y))
        return terminated or truncated

    async def disarm(self, i: int) -> None:
        await self._envs[i].sandbox.evaluate("core.clearTimer()")

    async def settle(self) -> None:
        """Let each sandbox finish preparing the next episode's context (prepare_next)."""
        for env in self._envs:
            spare = env.sandbox._spare  # noqa: SLF001 - the benchmark waits for its work
            if spare is not None:
                await asyncio.wait({spare._task})  # noqa: SLF001

    async def close(self) -> None:
        for env in self._envs:
            await env.close()
            await env.sandbox.close()
        await self._provider.close()


class MiniwobGymVariant(Variant):
    name, label = "miniwob", "(c) miniwob gym env (Selenium)"

    async def open(self, task: str, n: int) -> None:
        os.environ.setdefault("MINIWOB_CHROME_BINARY", CHROMIUM)
        os.environ.setdefault("MINIWOB_CHROMEDRIVER", CHROMEDRIVER)
        self.task = task
        self.base_url = f"{await self.resources.miniwob_url()}miniwob/"
        # One env (one chromedriver + Chromium) per slot, created in parallel like a pool would.
        self._envs = await asyncio.gather(*(asyncio.to_thread(self._make) for _ in range(n)))

    def _make(self) -> Any:
        import gymnasium
        import miniwob

        gymnasium.register_envs(miniwob)
        return gymnasium.make(f"miniwob/{self.task}-v1", base_url=self.base_url)

    async def reset(self, i: int, seed: int) -> None:
        await asyncio.to_thread(self._envs[i].reset, seed=seed)

    async def step(self, i: int, x: int, y: int) -> bool:
        return await asyncio.to_thread(self._step, self._envs[i], x, y)

    async def disarm(self, i: int) -> None:
        driver = self._envs[i].unwrapped.instance.driver
        await asyncio.to_thread(driver.execute_script, "core.clearTimer();")

    @staticmethod
    def _step(env: Any, x: int, y: int) -> bool:
        import numpy as np
        from miniwob.action import ActionTypes

        action = env.unwrapped.create_action(ActionTypes.CLICK_COORDS, coords=np.array([x, y]))
        _, _, terminated, truncated, _ = env.step(action)
        return bool(terminated or truncated)

    async def close(self) -> None:
        await asyncio.gather(*(asyncio.to_thread(env.close) for env in self._envs))


VARIANTS: dict[str, type[Variant]] = {
    v.name: v for v in (FloorVariant, JudgedFloorVariant, HarnessVariant, MiniwobGymVariant)
}
