"""Task synthesis: (site, start state, goal, instruction, difficulty, oracle path).

Goals come from the spec's named goals, from reachable states (any state can be a
goal), and from structured state (``expr`` goals: "the cart holds exactly two mugs and
one lamp"). Instructions are built from the goal's description, from the words of a
structured goal, or from the transitions' descriptions along the oracle path, in several
phrasings chosen by the seed. A task starts in the site's initial state, a state the
spec names, any given state, or a random reachable one. The oracle path is one shortest
path; ``difficulty`` is its length. Distances come from goal-directed search, so this
works on sites far too large to enumerate. Pure: the browser check of the oracle lives
elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fsm_sites.engine.machine import Edge, Machine, compile_site
from fsm_sites.engine.state import State
from fsm_sites.errors import SearchBudgetExceeded
from fsm_sites.spec.site import SORT_EVENT, VALUE_PLACEHOLDER, SiteSpec
from fsm_sites.spec.types import OTHER_TEXT, TextT
from fsm_sites.synthesis.goals import goal_about, random_walk, scalar_goal, structured, subjects

GoalKind = Literal["named", "state", "expr"]  # how a task's `goal` is read


class TaskSpec(BaseModel):
    """One task on one site, with its oracle solution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="unique id, stable for the same site, start and goal")
    site: str = Field(description="the site's name (SiteSpec.name)")
    start_state: str = Field(description="State.key() of the state the episode starts in")
    goal: str = Field(description="a named goal id ('named'), a target State.key() ('state'), or "
                      "'expr:' and a condition over the variables ('expr')")
    goal_kind: GoalKind = Field(description="how to read `goal`")
    instruction: str = Field(description="what the agent is told to do")
    difficulty: int = Field(ge=0, description="length of the shortest path from start to goal")
    oracle_path: list[dict[str, Any]] = Field(description="one shortest path, as Edge.to_dict() records")

    def goal_predicate(self, machine: Machine) -> Callable[[State], bool]:
        """The goal as a predicate over states (cached inside the machine)."""
        if self.goal_kind == "named":
            return machine.goal_predicate(self.goal)
        if self.goal_kind == "expr":
            return machine.resolve_goal(self.goal)
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


def describe_edge(machine: Machine, edge: Edge, state: State | None = None) -> str:
    """The transition's description with ``$value`` filled in (the option's label as the
    page shows it for a select or radio group, the value itself for text to type) and its
    ``{expr}`` holes filled from the item clicked (a repeated element)."""
    t = machine.transitions[edge.transition_id]
    text = t.description
    value = edge.value or ""
    page_id = edge.page.split("(", 1)[0]
    element = machine.elements.get((page_id, edge.element))
    free = machine.schema.variables.get(element.bind or "") if element is not None else None
    if isinstance(free, TextT) and edge.event == "input" and VALUE_PLACEHOLDER in text:
        if value == "":  # never "type '' as your phone number"
            return f"clear the {_lower(element.label if element else edge.element)} field"
        if value == free.other and free.other == OTHER_TEXT:  # the class of any other text: no text to quote
            text = re.sub(rf"""(['"]?){re.escape(VALUE_PLACEHOLDER)}\1""", "some text of your choice", text)
    options = machine.views.options(edge.page, edge.element) if element else ()
    option = next((o for o in options if o.value == value), None)
    shown = option.label if option and option.label else value
    if edge.event == SORT_EVENT and element is not None and element.sort:  # an order, by its label
        shown = machine.schema.variables[element.sort].show(value)
    text = text.replace(VALUE_PLACEHOLDER, shown)
    if "{" in text and element is not None and state is not None:
        # a sortable's move "from>to" names the copy it drags before the '>'
        key = value.partition(">")[0] if edge.event == "move" else value
        item = dict(machine.views.instances(state, edge.element)).get(key) if element.repeat else None
        return machine.views.text(state, text, element=edge.element, item=item)
    return text


def _lower(label: str) -> str:
    """A label inside a sentence: "Delivery city" -> "delivery city" (an acronym kept)."""
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def path_instruction(machine: Machine, path: list[Edge], rng: random.Random, start: State | None = None) -> str:
    steps = []
    state = start
    for edge in path:
        steps.append(describe_edge(machine, edge, state))
        fired = machine.step(state, edge.to_event()) if state is not None else None
        state = fired[1] if fired else None
    return rng.choice(_STEP_JOINS)(steps) if steps else "Stay where you are."


def goal_instruction(spec: SiteSpec, description: str, rng: random.Random) -> str:
    return _cap(rng.choice(_GOAL_PHRASES).format(d=description, site=spec.title))


def _task_id(site: str, start: str, goal: str) -> str:
    digest = hashlib.sha1(f"{site}|{start}|{goal}".encode()).hexdigest()[:10]
    return f"{site}-{digest}"


@dataclass(frozen=True)
class SkippedGoal:
    """A named goal task synthesis left out, and why."""

    goal: str
    reason: str


def _make_task(machine: Machine, start: State, goal: str, kind: GoalKind, rng: random.Random,
               description: str | None = None) -> TaskSpec | str:
    """The task, or why there is none (a goal that is no task from ``start``)."""
    predicate = machine.resolve_goal(goal) if kind != "state" else machine.state_goal(goal)
    try:
        paths = machine.shortest_paths(start, predicate, limit=8)
    except SearchBudgetExceeded as exc:
        return f"its search ran past its budget ({exc})"  # too far to verify cheaply: not a task
    if not paths:
        return "no state reachable from the start meets it"
    if not paths[0]:
        return "it already holds at the start"
    path = rng.choice(paths)
    spec = machine.spec
    if kind == "named":
        description = next(g.description for g in spec.goals if g.id == goal)
    if description is not None:
        instruction = goal_instruction(spec, description, rng)
    else:
        instruction = path_instruction(machine, path, rng, start)
    return TaskSpec(
        id=_task_id(spec.name, start.key(), goal), site=spec.name, start_state=start.key(), goal=goal,
        goal_kind=kind, instruction=instruction, difficulty=len(path),
        oracle_path=[e.to_dict() for e in path],
    )


def _state_goals(machine: Machine, start: State, rng: random.Random, count: int, max_depth: int,
                 budget: int = 20_000) -> list[str]:
    """Reachable states as goals, spread over distances 1..max_depth (round-robin by distance);
    from a breadth-first search of at most ``budget`` states (depths are exact)."""
    depth: dict[tuple, int] = {}
    frontier = [machine.node(machine.canonical(start))]
    depth[frontier[0]] = 0
    d = 0
    while frontier and d < max_depth and len(depth) < budget:
        d += 1
        nxt = []
        for page, vals in frontier:
            for _, _, node in machine.full.expand(page, vals):
                if node not in depth and len(depth) < budget:
                    depth[node] = d
                    nxt.append(node)
        frontier = nxt
    by_depth: dict[int, list[tuple]] = {}
    for node, d in depth.items():
        if 1 <= d:
            by_depth.setdefault(d, []).append(node)
    for bucket in by_depth.values():
        rng.shuffle(bucket)
    picked: list[str] = []
    levels = sorted(by_depth)
    while len(picked) < count and any(by_depth[d] for d in levels):
        for d in levels:
            if by_depth[d] and len(picked) < count:
                picked.append(machine.state(by_depth[d].pop()).key())
    return picked


def _expr_goals(machine: Machine, start: State, rng: random.Random, count: int, max_depth: int) -> list[tuple[str, str]]:
    """Goals over structured state (else over scalars), from the ends of random walks."""
    variables = structured(machine) or subjects(machine)
    out: list[tuple[str, str]] = []
    for _ in range(8 * count):
        if len(out) >= count or not variables:
            break
        end = random_walk(machine, start, rng.randint(2, 2 * max_depth), rng)
        var = rng.choice(variables)
        found = (goal_about(machine, end, var, rng, start) if var in structured(machine)
                 else scalar_goal(machine, end, var, start))
        if found is not None and all(found[0] != text for text, _ in out):
            out.append(found)
    return out


def resolve_start(machine: Machine, start: State | str | None, rng: random.Random, max_depth: int = 15) -> State:
    """A task's start: None (the initial state), a State, a state key, the id of a start
    state the spec names, or "random" (a random reachable state)."""
    if start is None:
        return machine.initial
    if isinstance(start, State):
        return start
    if start == "random":
        return random_walk(machine, machine.initial, rng.randint(1, max_depth), rng)
    if any(s.id == start for s in machine.spec.starts):
        return machine.named_start(start)
    state = State.from_key(start)
    if not machine.is_reachable(state):
        raise ValueError(f"expected a start state reachable from the initial state of {machine.spec.name!r}, got {start!r}")
    return state


def synthesize_tasks(spec: SiteSpec, n: int, seed: int = 0, *, max_depth: int = 15,
                     start: State | str | None = None, skipped: list[SkippedGoal] | None = None) -> list[TaskSpec]:
    """Up to ``n`` distinct tasks: the named goals first, then reachable states and goals over
    structured state as goals, alternating.

    ``start`` is where each task begins (see ``resolve_start``; "random" draws one per task).
    Deterministic for (spec, n, seed, start). Fewer than ``n`` come back when the site has
    fewer reachable goals. Every task's oracle path is a shortest path, ``difficulty`` its length,
    at most ``max_depth``. ``skipped``, when given, gets every named goal left out, with why.
    """
    machine = compile_site(spec)
    rng = random.Random(f"tasks-{spec.name}-{seed}")

    def begin() -> State:
        return resolve_start(machine, start, rng, max_depth)

    fixed = None if start == "random" else begin()
    named = [g.id for g in spec.goals]
    rng.shuffle(named)
    tasks: list[TaskSpec] = []
    for goal in named:
        first = machine.goal_start(goal) or fixed or begin()  # a goal that names its start begins there
        task = _make_task(machine, first, goal, "named", rng)
        reason = task if isinstance(task, str) else None
        if isinstance(task, TaskSpec) and task.difficulty > max_depth:
            reason = f"{task.difficulty} steps from the start, deeper than --max-depth {max_depth}"
        elif isinstance(task, TaskSpec) and len(tasks) >= n:
            reason = f"the {n} task(s) asked for (--n) were made before it"
        if reason is None and isinstance(task, TaskSpec):
            tasks.append(task)
        elif skipped is not None and reason is not None:
            skipped.append(SkippedGoal(goal, reason))
    want = n - len(tasks)
    exprs = _expr_goals(machine, fixed or machine.initial, rng, want // 2, max_depth) if structured(machine) else []
    states = _state_goals(machine, fixed or machine.initial, rng, want, max_depth)
    mixed: list[tuple[GoalKind, str, str | None]] = [("expr", "expr:" + text, words) for text, words in exprs]
    mixed = [x for pair in zip(mixed, [("state", k, None) for k in states], strict=False) for x in pair] + \
        [("state", k, None) for k in states[len(mixed):]]
    seen = {t.id for t in tasks}
    for kind, goal, words in mixed:
        if len(tasks) >= n:
            break
        first = fixed or begin()
        task = _make_task(machine, first, goal, kind, rng, words)
        if isinstance(task, TaskSpec) and task.difficulty <= max_depth and task.id not in seen:
            seen.add(task.id)
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
