"""The MiniWoB++ suite: registry, page server, and every shipped page starting an episode."""

from __future__ import annotations

import asyncio
import urllib.request

import pytest

from harness.errors import UnknownTaskError
from harness.resources import TaskResources
from harness.tasks import registry
from harness.tasks.miniwob import MiniWoBTask, task_dir, task_names
from harness.tasks.registry import make_task, suite_task_ids, task_has_oracle


def test_suite_lists_every_shipped_page() -> None:
    ids = suite_task_ids("miniwob")
    assert len(ids) == len(list(task_dir().glob("*.html"))) == 130
    assert "miniwob:click-button" in ids
    assert suite_task_ids("miniwob:click-link,click-button") == [
        "miniwob:click-link", "miniwob:click-button",
    ]


def test_unknown_names_list_close_matches() -> None:
    with pytest.raises(UnknownTaskError, match="did you mean 'click-button'"):
        suite_task_ids("miniwob:click-buton")
    with pytest.raises(UnknownTaskError, match="did you mean 'miniwob'"):
        make_task("miniwbo:click-test")
    with pytest.raises(UnknownTaskError, match="expected a task id"):
        make_task("click-test")


def test_register_suite_is_one_line(monkeypatch) -> None:
    class TinySuite:
        def names(self):
            return ["click-test"]

        def make(self, name):
            return MiniWoBTask(name)

    monkeypatch.setitem(registry.SUITES, "tiny", "x:y")
    monkeypatch.setattr(registry, "SUITES", dict(registry.SUITES))
    import sys
    import types

    module = types.ModuleType("tiny_suite_mod")
    module.suite = TinySuite
    monkeypatch.setitem(sys.modules, "tiny_suite_mod", module)
    registry.register_suite("tiny", "tiny_suite_mod:suite")
    try:
        assert suite_task_ids("tiny") == ["tiny:click-test"]
        assert make_task("tiny:click-test").id == "miniwob:click-test"
    finally:
        registry.load_suite.cache_clear()


def test_oracles_are_declared() -> None:
    assert task_has_oracle(make_task("miniwob:click-button"))
    assert not task_has_oracle(make_task("miniwob:book-flight"))


async def test_page_server_binds_the_resources_host_and_closes_with_them() -> None:
    async with TaskResources() as resources:
        url = await resources.miniwob_url()
        assert url.startswith("http://127.0.0.1:")
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(f"{url}core/core.js", timeout=10).read())
        assert b"WOB_REWARD_GLOBAL" in body
    with pytest.raises(OSError):
        await asyncio.to_thread(urllib.request.urlopen, f"{url}core/core.js", timeout=5)


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_all_pages_load_and_start_an_episode(provider) -> None:
    """Every page loads, starts a seeded episode, has an instruction and is not done yet.

    One context per worker navigates page to page (a fresh context per page, as
    ``setup`` makes, costs 4x more on a loaded machine and is covered by the env tests).
    """
    names = task_names()
    pending = list(names)
    failures: dict[str, str] = {}

    resources = TaskResources()
    base = await resources.miniwob_url()

    async def worker() -> None:
        sandbox = await provider.new_browser(viewport_width=160, viewport_height=210)
        await MiniWoBTask("click-test").setup(sandbox, seed=0, resources=resources)
        try:
            while pending:
                task = MiniWoBTask(pending.pop())
                try:
                    await sandbox.page.goto(f"{base}miniwob/{task.name}.html", wait_until="domcontentloaded")
                    instruction = await task.start_episode(sandbox, seed=0)
                    judged = await task.validate(sandbox, None)
                    if not instruction or judged.done:
                        failures[task.name] = f"instruction={instruction!r} done={judged.done}"
                except Exception as exc:  # collect them all, report at once
                    failures[task.name] = repr(exc)
        finally:
            await sandbox.close()

    try:
        await asyncio.gather(*(worker() for _ in range(4)))
    finally:
        await resources.close()
    assert not failures, failures
    assert len(names) == 130


async def test_every_episode_gets_a_fresh_context_and_the_same_seed_the_same_episode(
    provider,
) -> None:
    """With the next episode's context prepared in the background (the sandbox default),
    each episode still starts in a context no earlier episode used, and a seed still
    decides the episode."""
    from harness.env import AsyncEnv

    task = MiniWoBTask("click-button")
    sandbox = await provider.new_sandbox(task.sandbox_request)
    env = AsyncEnv(task, sandbox, resources=TaskResources())
    try:
        contexts, instructions = [], []
        for seed in (7, 8, 7, 7):  # from the third reset on, contexts come prepared
            obs, _ = await env.reset(seed=seed)
            contexts.append(sandbox.page.context)
            instructions.append(obs.instruction)
            state = "[document.cookie, localStorage.getItem('mark'), window.marked === true]"
            assert await sandbox.evaluate(state) == ["", None, False]
            await sandbox.evaluate("document.cookie = 'mark=1'; localStorage.setItem('mark', '1');"
                                   " window.marked = true")
        assert len({id(context) for context in contexts}) == 4
        assert instructions[0] == instructions[2] == instructions[3] != instructions[1]
    finally:
        await env.close()
        await sandbox.close()
