"""The task curriculum: sample by recent success, spawn easier verified variants, retire.

- **Sampling.** A task's weight is ``floor + 4 p (1 - p)`` for its recent success rate ``p``
  (over the last ``window`` episodes): tasks neither solved nor hopeless are drawn most;
  a task not yet tried weighs 1.
- **Variants.** A task whose last ``variants_after`` groups had no success spawns two easier
  variants (once), both verified on the site's state machine before they join the pool:
  ``start``, the same goal from a state halfway along a shortest path (restored at reset, as
  VeriGUI's "any subtask is a start point" suggests), and ``goal``, the state halfway along
  as the goal, with an instruction naming the steps to it.
- **Retirement.** A task whose last ``retire_after`` groups were all solved leaves the pool
  (the last active task never does).

Variants are tasks of the ``curriculum`` suite (``curriculum:<id>``), registered in this
process with :func:`register_variant`; a checkpoint holds their specs, so a resumed run has
them again.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from fsm_sites.engine.machine import compile_site
from fsm_sites.engine.state import State
from fsm_sites.library import load_machine
from fsm_sites.synthesis.tasks import TaskSpec, path_instruction
from harness.tasks.fsm import FSMTask
from harness.tasks.registry import SUITES, make_task, register_suite
from trainers.grpo.config import CurriculumSpec

PREFIX = "curriculum"
FLOOR = 0.1
#: variant id -> (spec, the parent task id); filled by register_variant
VARIANTS: dict[str, tuple[TaskSpec, str]] = {}


class VariantSuite:
    """The ``curriculum`` suite: the variants registered in this process."""

    def names(self) -> list[str]:
        return list(VARIANTS)

    def make(self, name: str) -> FSMTask:
        spec, parent = VARIANTS[name]
        base = make_task(parent)
        site_spec = base.site_spec if isinstance(base, FSMTask) else None
        task = FSMTask(spec, site_spec=site_spec, name=name)
        task.id = f"{PREFIX}:{name}"
        return task


def suite() -> VariantSuite:
    """The registry's entry point for the ``curriculum`` prefix."""
    return VariantSuite()


def register_variant(spec: TaskSpec, parent: str) -> str:
    """Make ``spec`` a task (``curriculum:<spec.id>``); returns its task id."""
    if PREFIX not in SUITES:
        register_suite(PREFIX, "trainers.grpo.curriculum:suite")
    VARIANTS[spec.id] = (spec, parent)
    return f"{PREFIX}:{spec.id}"


def make_variants(task_id: str, *, seed: int = 0) -> list[TaskSpec]:
    """Easier verified variants of an FSM task (see the module docstring); none for a task
    whose shortest path is shorter than 2 steps or that is not an FSM task."""
    task = make_task(task_id)
    if not isinstance(task, FSMTask) or len(task.choices) != 1:
        return []
    base = task.choices[0]
    machine = _machine(task)
    start = State.from_key(base.start_state) if "{" in base.start_state else machine.named_start(base.start_state)
    goal = machine.resolve_goal(base.goal)
    paths = machine.shortest_paths(start, goal, limit=1)
    if not paths or len(paths[0]) < 2:
        return []
    path = paths[0]
    half = len(path) // 2
    middle = start
    for edge in path[:half]:
        fired = machine.step(middle, edge.to_event())
        if fired is None:
            return []
        middle = fired[1]
    kind: Literal["named", "state", "expr"] = base.goal_kind if isinstance(base, TaskSpec) else "named"
    variants = []
    if machine.distance(middle, goal) == len(path) - half:
        variants.append(TaskSpec(
            id=f"{_slug(task_id)}~start{half}", site=base.site, start_state=middle.key(), goal=base.goal,
            goal_kind=kind, instruction=base.instruction, difficulty=len(path) - half,
            oracle_path=[e.to_dict() for e in path[half:]]))
    if machine.distance(start, machine.state_goal(middle)) == half:
        variants.append(TaskSpec(
            id=f"{_slug(task_id)}~goal{half}", site=base.site, start_state=start.key(), goal=middle.key(),
            goal_kind="state", instruction=path_instruction(machine, path[:half], random.Random(seed), start),
            difficulty=half, oracle_path=[e.to_dict() for e in path[:half]]))
    return variants


def _machine(task: FSMTask) -> Any:

    spec = task.site_spec
    spec = getattr(task, "_site_spec", None)
    return compile_site(spec) if spec is not None else load_machine(task.choices[0].site)


def _slug(task_id: str) -> str:
    return task_id.split(":", 1)[-1].replace("/", ".").replace("#", ".")


@dataclass
class PoolTask:
    """One task of the pool and its recent record."""

    id: str
    kind: str = "base"  # base, start (closer start) or goal (nearer goal)
    parent: str | None = None
    outcomes: list[float] = field(default_factory=list)  # recent episodes' success (1/0)
    groups_failed: int = 0  # groups in a row without a success
    groups_solved: int = 0  # groups in a row with every episode solved
    spawned: bool = False
    retired: bool = False

    @property
    def rate(self) -> float | None:
        return sum(self.outcomes) / len(self.outcomes) if self.outcomes else None


class Curriculum:
    """The pool of training tasks (see the module docstring)."""

    def __init__(self, task_ids: Sequence[str], spec: CurriculumSpec) -> None:
        self.spec = spec
        self.pool: dict[str, PoolTask] = {t: PoolTask(t) for t in task_ids}
        # unset: room for every base task's two variants
        self.max_pool = spec.max_pool if spec.max_pool is not None else 3 * len(self.pool)

    def weight(self, task: PoolTask) -> float:
        p = task.rate
        if not self.spec.enabled or p is None:
            return 1.0
        return FLOOR + 4 * p * (1 - p)

    def sample(self, count: int, rng: random.Random, exclude: Collection[str] = ()) -> list[str]:
        """``count`` distinct active tasks not in ``exclude`` (fewer when the pool is smaller),
        by weight."""
        active = [t for t in self.pool.values() if not t.retired and t.id not in exclude]
        chosen: list[str] = []
        while active and len(chosen) < count:
            pick = rng.choices(active, weights=[self.weight(t) for t in active])[0]
            chosen.append(pick.id)
            active.remove(pick)
        return chosen

    def record(self, task_id: str, successes: Sequence[bool]) -> list[str]:
        """Fold one group's outcomes in; returns what changed (``spawned ID``, ``retired ID``)."""
        task = self.pool[task_id]
        task.outcomes = (task.outcomes + [float(s) for s in successes])[-self.spec.window:]
        task.groups_failed = 0 if any(successes) else task.groups_failed + 1
        task.groups_solved = task.groups_solved + 1 if all(successes) else 0
        if not self.spec.enabled:
            return []
        events = []
        if task.groups_failed >= self.spec.variants_after and not task.spawned:
            task.spawned = True
            for variant in make_variants(task_id):
                if len(self.pool) >= self.max_pool:
                    break
                vid = register_variant(variant, task_id)
                kind = "start" if "~start" in variant.id else "goal"
                self.pool.setdefault(vid, PoolTask(vid, kind=kind, parent=task_id))
                events.append(f"spawned {vid}")
        active = sum(not t.retired for t in self.pool.values())
        if task.groups_solved >= self.spec.retire_after and active > 1:
            task.retired = True
            events.append(f"retired {task_id}")
        return events

    def summary(self) -> dict[str, dict[str, Any]]:
        """Each task's kind, recent success rate, episodes seen and whether it is retired."""
        return {t.id: {"kind": t.kind, "rate": t.rate, "n": len(t.outcomes), "retired": t.retired}
                for t in self.pool.values()}

    def state_dict(self) -> dict[str, Any]:
        variants = {vid: (spec.model_dump(), parent) for vid, (spec, parent) in VARIANTS.items()}
        return {"pool": [asdict(t) for t in self.pool.values()], "variants": variants}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for _, (spec, parent) in state["variants"].items():
            register_variant(TaskSpec.model_validate(spec), parent)
        self.pool = {t["id"]: PoolTask(**t) for t in state["pool"]}
