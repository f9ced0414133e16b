"""Task synthesis: (site, start state, goal, instruction, difficulty, oracle path).

Goals come from the spec's named goals and from reachable states (any state can
be a goal). Instructions are built from the goal's description or from the
transitions' descriptions along the oracle path, in several phrasings chosen by
the seed. The oracle path is one shortest path; ``difficulty`` is its length.
Pure: the browser check that the oracle really works lives elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fsm_sites.engine import Edge, Machine, compile_site
from fsm_sites.spec import VALUE_PLACEHOLDER, SiteSpec
from fsm_sites.state import State


class TaskSpec(BaseModel):
    """One task on one site, with its oracle solution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="unique id, stable for the same site, start and goal")
    site: str = Field(description="the site's name (SiteSpec.name)")
    start_state: str = Field(description="State.key() of the state the episode starts in")
    goal: str = Field(description="a named goal id (goal_kind 'named') or a target State.key() ('state')")
    goal_kind: Literal["named", "state"] = Field(description="how to read `goal`")
    instruction: str = Field(description="what the agent is told to do")
    difficulty: int = Field(ge=0, description="length of the shortest path from start to goal")
    oracle_path: list[dict[str, Any]] = Field(description="one shortest path, as Edge.to_dict() records")

    def goal_predicate(self, machine: Machine) -> Callable[[State], bool]:
        """The goal as a predicate over states (cached inside the machine)."""
        if self.goal_kind == "named":
            return machine.goal_predicate(self.goal)
        return machine.state_goal(self.goal)

    def start(self) -> State:
        return State.from_key(self.start_state)

    def oracle_edges(self) -> list[Edge]:
        return [Edge.from_dict(d) for d in self.oracle_path]


_STEP_JOINS: tuple[Callable[[list[str]], str], ...] = (
    lambda s: "First " + ", then ".join(s) + ".",
    lambda s: "; ".join(x[0].upper() + x[1:] for x in s) + ".",
    lambda s: "Please " + (", ".join(s[:-1]) + " and " + s[-1] if len(s) > 1 else s[0]) + ".",
    lambda s: "Steps: " + " ".join(f"{i + 1}. {x[0].upper() + x[1:]}." for i, x in enumerate(s)),
    lambda s: "Go ahead and " + ", ".join(s[:-1]) + (", and finally " if len(s) > 1 else "") + s[-1] + ".",
)
_GOAL_PHRASES: tuple[str, ...] = (
    "{d}.", "Your task: {d}.", "On {site}, {d}.", "I need you to {d}.", "Could you {d}?", "Goal: {d}.",
)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def describe_edge(machine: Machine, edge: Edge) -> str:
    """The transition's description with ``$value`` filled in: the option's label as the
    page shows it for a select or radio group, the value itself for text to type."""
    text = machine.transitions[edge.transition_id].description
    value = edge.value or ""
    element = next((e for e in machine.pages[edge.page].elements if e.id == edge.element), None)
    option = next((o for o in (element.options if element else ()) if o.value == value), None)
    return text.replace(VALUE_PLACEHOLDER, option.label if option and option.label else value)


def path_instruction(machine: Machine, path: list[Edge], rng: random.Random) -> str:
    steps = [describe_edge(machine, e) for e in path]
    return rng.choice(_STEP_JOINS)(steps) if steps else "Stay where you are."


def goal_instruction(spec: SiteSpec, description: str, rng: random.Random) -> str:
    return _cap(rng.choice(_GOAL_PHRASES).format(d=description, site=spec.title))


def _task_id(site: str, start: str, goal: str) -> str:
    digest = hashlib.sha1(f"{site}|{start}|{goal}".encode()).hexdigest()[:10]
    return f"{site}-{digest}"


def _make_task(machine: Machine, start: State, goal: str, kind: str, rng: random.Random) -> TaskSpec | None:
    predicate = machine.goal_predicate(goal) if kind == "named" else machine.state_goal(goal)
    paths = machine.shortest_paths(start, predicate, limit=8)
    if not paths or not paths[0]:
        return None  # unreachable, or already satisfied at the start: no task there
    path = rng.choice(paths)
    spec = machine.spec
    if kind == "named":
        description = next(g.description for g in spec.goals if g.id == goal)
        instruction = goal_instruction(spec, description, rng)
    else:
        instruction = path_instruction(machine, path, rng)
    return TaskSpec(
        id=_task_id(spec.name, start.key(), goal), site=spec.name, start_state=start.key(), goal=goal,
        goal_kind=kind, instruction=instruction, difficulty=len(path),  # type: ignore[arg-type]
        oracle_path=[e.to_dict() for e in path],
    )


def _state_goals(machine: Machine, start: State, rng: random.Random, count: int, max_depth: int) -> list[str]:
    """Reachable states as goals, spread over distances 1..max_depth (round-robin by distance)."""
    graph = machine.graph(start=start)
    depth: dict[State, int] = {start: 0}
    for state in graph.states:  # BFS order: first visit is the shortest distance
        for _, nxt in graph.edges[state]:
            depth.setdefault(nxt, depth[state] + 1)
    by_depth: dict[int, list[State]] = {}
    for state, d in depth.items():
        if 1 <= d <= max_depth:
            by_depth.setdefault(d, []).append(state)
    for bucket in by_depth.values():
        rng.shuffle(bucket)
    picked: list[str] = []
    levels = sorted(by_depth)
    while len(picked) < count and any(by_depth[d] for d in levels):
        for d in levels:
            if by_depth[d] and len(picked) < count:
                picked.append(by_depth[d].pop().key())
    return picked


def synthesize_tasks(spec: SiteSpec, n: int, seed: int = 0, *, max_depth: int = 15,
                     start: State | None = None) -> list[TaskSpec]:
    """Up to ``n`` distinct tasks: the named goals first, then reachable states as goals.

    Deterministic for (spec, n, seed). Fewer than ``n`` come back when the site has fewer
    reachable goals. Every task's oracle path is a shortest path, ``difficulty`` its length.
    """
    machine = compile_site(spec)
    start = start or machine.initial
    rng = random.Random(f"tasks-{spec.name}-{seed}")
    named = [g.id for g in spec.goals]
    rng.shuffle(named)
    tasks: list[TaskSpec] = []
    for goal in named:
        task = _make_task(machine, start, goal, "named", rng)
        if task and task.difficulty <= max_depth and len(tasks) < n:
            tasks.append(task)
    for key in _state_goals(machine, start, rng, n - len(tasks), max_depth):
        task = _make_task(machine, start, key, "state", rng)
        if task:
            tasks.append(task)
    return tasks


def save_tasks(tasks: Iterable[TaskSpec], path: str | Path) -> int:
    """Write tasks as JSON lines; returns how many were written."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(task.model_dump_json() + "\n")
            count += 1
    return count


def load_tasks(path: str | Path) -> list[TaskSpec]:
    """Read tasks written by ``save_tasks``; a bad line raises naming its line number."""
    tasks = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            tasks.append(TaskSpec.model_validate(json.loads(line)))
        except ValueError as exc:
            raise ValueError(f"{path}:{lineno}: expected a TaskSpec JSON object, got an invalid line; {exc}") from exc
    return tasks
