"""Gymnasium ids for every task of the built-in suites: importing this module registers them.

    import gymnasium
    import harness.gym_ids  # noqa: F401 - registers the cua/ ids

    env = gymnasium.make("cua/miniwob.click-test", max_steps=5)
    env = gymnasium.make("cua/fsm.shop.open_mug", reward="step")
    env = gymnasium.make("cua/desktop.xterm-write-file")

or, without the import, ``gymnasium.make("harness.gym_ids:cua/miniwob.click-test")``
(gymnasium imports the module named before the colon). An id is the task id with ``:`` and
``/`` written as ``.`` (gymnasium reads a colon as "module:id" and a slash as the namespace's
end): ``fsm:shop/open_mug`` is ``cua/fsm.shop.open_mug``, and ``cua/fsm.shop`` draws one of
the site's goals per seed. Keyword arguments of ``make`` go to ``GymEnv`` (``provider``,
``codec``, ``max_steps``, ``reward``, ``step_timeout_s``). Tasks without an id here (synth
files, viewports such as ``@phone``) are made with ``harness.gym_env.make_env(task_id)``.

Registering lists every suite's tasks (the FSM library's goals included), which takes a
few seconds; that is why it lives here and not in ``harness.gym_env``.
"""

from __future__ import annotations

from collections.abc import Iterable

import gymnasium
from gymnasium.envs.registration import parse_env_id

from harness.tasks.registry import suite_task_ids

NAMESPACE = "cua"
#: the suites that get ids: browser pages, FSM sites, desktop apps
SUITES = ("miniwob", "fsm", "desktop")


def gym_id(task_id: str) -> str:
    """The gymnasium id of a task: ``fsm:shop/open_mug`` -> ``cua/fsm.shop.open_mug``."""
    return f"{NAMESPACE}/" + task_id.replace(":", ".").replace("/", ".")


def register_gym_ids(suites: Iterable[str] = SUITES) -> list[str]:
    """Register ``cua/...`` for every task of ``suites`` (again: a no-op); the ids."""
    ids = []
    for suite in suites:
        for task_id in suite_task_ids(suite):
            env_id = gym_id(task_id)
            if parse_env_id(env_id) != (NAMESPACE, env_id.split("/", 1)[1], None):
                continue  # a name gymnasium would read as versioned ("-v2"): make_env serves it
            if env_id not in gymnasium.registry:
                gymnasium.register(id=env_id, entry_point="harness.gym_env:make_env",
                                   kwargs={"task_id": task_id})
            ids.append(env_id)
    return ids


IDS = register_gym_ids()
