"""What the element list names, in real Chromium: every oracle target of the curated sites and
of a sample of generated sites is named by a label its prompt shows, no two elements share a
name there, and MiniWoB's transfer tasks are solved by a rule agent writing the names the
list shows (issue 21, "Observations that carry what the task needs")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.miniwob_rules import TRANSFER_TASKS, RuleAgent
from fsm_sites.engine.machine import Machine, compile_site
from fsm_sites.engine.state import Edge, State
from fsm_sites.generator import Difficulty, synthesize_site
from fsm_sites.library import list_sites, load_machine, load_site
from fsm_sites.render.page import render_page
from fsm_sites.spec.site import SiteSpec
from harness.actions import Click, ClickElement, Drag, Move
from harness.env import AsyncEnv, resolve_element_action
from harness.observation import Observation
from harness.prompts import as_element_action, element_lines, shown_names
from harness.resources import TaskResources
from harness.rollout import rollout
from harness.tasks.fsm import goal_tasks
from harness.tasks.fsm_oracle import next_action, probe_expression
from harness.tasks.registry import make_task
from sandboxes.base import UIElement

VIEWPORT = (1280, 2000)  # tall, so that a target is on screen without the oracle's scroll
#: generated sites sampled (seed, difficulty); the hard one lists records with a button a row
GENERATED: tuple[tuple[int, Difficulty], ...] = ((0, "easy"), (1, "medium"), (2, "hard"))


def _paths(spec: SiteSpec, machine: Machine) -> dict[str, tuple[State, list[Edge]]]:
    """The states on one shortest path to each of the site's named goals (the tasks the
    synthesizer makes first), each with the edges the oracle takes from it."""
    states: dict[str, tuple[State, list[Edge]]] = {}
    for task in goal_tasks(spec, machine):
        state = State.from_key(task.start_state)
        for edge in machine.shortest_paths(state, task.goal, limit=1)[0]:
            edges = states.setdefault(state.key(), (state, []))[1]
            if edge not in edges:
                edges.append(edge)
            state = machine.step(state, edge.to_event())[1]
    return states


def _sites() -> Iterator[tuple[str, SiteSpec, Machine]]:
    for name in list_sites():
        yield name, load_site(name), load_machine(name)
    for seed, difficulty in GENERATED:
        spec = synthesize_site(seed, difficulty)
        yield f"{spec.name} ({difficulty})", spec, compile_site(spec)


def _numbered(elements: list[UIElement]) -> list[str]:
    """The names the list had to number: elements nothing visible tells apart."""
    return [name.text for element, name in zip(elements, shown_names(elements), strict=True)
            if name.label != (" ".join(element.label.split()) or element.role)]


async def test_every_oracle_target_is_named_by_a_label_its_prompt_shows(provider) -> None:
    """On every state of a shortest path to each named goal (each site under its own layout
    seed), the element the oracle acts on is listed under a label, the name a click on it
    exports is in the prompt and resolves back to it, and no name needs a number."""
    sandbox = await provider.new_browser(viewport_width=VIEWPORT[0], viewport_height=VIEWPORT[1])
    checked, failures = 0, []
    try:
        await sandbox.reset()
        for layout, (site, spec, machine) in enumerate(_sites()):
            for state, edges in _paths(spec, machine).values():
                html = render_page(spec, state, seed=layout, machine=machine)
                await sandbox.page.set_content(html, wait_until="domcontentloaded")
                elements = await sandbox.elements()
                numbered = _numbered(elements)
                for edge in edges:
                    probe = await sandbox.evaluate(probe_expression(edge))
                    problem = _check_target(next_action(edge, probe, state.page), elements)
                    checked += problem != "off screen"
                    if problem not in (None, "off screen") or numbered:
                        failures.append(f"{site} {state.page} {edge.element}/{edge.event}: {problem or ''} "
                                        f"numbered {numbered}\n{element_lines(elements)}")
    finally:
        await sandbox.close()
    assert not failures, "\n\n".join(failures[:5])
    assert checked > 250  # the sample is not empty: 15 sites' goal paths


def _check_target(action: object, elements: list[UIElement]) -> str | None:
    """Why the element ``action`` aims at is not named by a label the prompt shows (None: it is)."""
    if not isinstance(action, Click | Move | Drag):
        return "off screen"  # a scroll first (or a page still loading)
    point = Click(x=action.x, y=action.y)
    named = as_element_action(point, elements)
    if not isinstance(named, ClickElement):
        return f"the oracle's {action} hits no listed element"
    target = min((e for e in elements if e.x <= point.x < e.x + e.width and e.y <= point.y < e.y + e.height),
                 key=lambda e: e.width * e.height)
    if not target.label.strip():
        return f"the target {target} has no label"
    name = next(n for e, n in zip(elements, shown_names(elements), strict=True) if e is target)
    line = f"- {target.role} \"{name.label}\"{name.place}"
    listed = [shown for shown in element_lines(elements).splitlines() if shown.startswith(line)]
    if not listed or not all(shown == line or shown[len(line)] == " " for shown in listed) \
            or name.text != named.element:
        return f"the target {named.element!r} is not listed as {line!r}"
    obs = Observation(screenshot=b"", image_format="png", width=VIEWPORT[0], height=VIEWPORT[1],
                      instruction="", step=0, elements=tuple(elements))
    click, error = resolve_element_action(named, obs)
    if error is not None or click is None or click.x - target.x not in range(target.width) \
            or click.y - target.y not in range(target.height):
        return f"{named.element!r} resolves to {click} ({error}), not to {target}"
    return None


#: tasks whose outcome depends on when the agent acts, not on what it can name: the Submit
#: button of click-collapsible moves while the opened section slides down, so a click aimed
#: at where the list showed it lands beside it in some runs
TIMING_BOUND = frozenset({"click-collapsible"})


@pytest.fixture(scope="module")
async def resources():
    async with TaskResources() as shared:
        yield shared


@pytest.mark.parametrize("task", list(TRANSFER_TASKS))
async def test_the_rule_agent_solves_each_transfer_task_by_the_names_listed(provider, resources, task) -> None:
    """MiniWoB's element list lets each chosen task be solved from it: the rule agent writes,
    at every step, a name the prompt lists, which resolves to the element listed under it."""
    made = make_task(f"miniwob:{task}")
    sandbox = await provider.new_sandbox(made.sandbox_request)
    env = AsyncEnv(made, sandbox, elements=True, resources=resources)
    try:
        episode = await rollout(env, RuleAgent(), seed=0, max_steps=10)
    finally:
        await env.close()
        await sandbox.close()
    if task not in TIMING_BOUND:
        assert episode.success, [t.agent_step.text for t in episode.transitions]
    clicks = [step for step in episode.transitions if step.info.requested is not None]
    assert clicks
    for step in clicks:
        shown = step.before.elements or ()
        names = [n.text for n in shown_names(shown)]
        asked = step.info.requested["element"]
        assert asked in names, f"{asked!r} is not a name of\n{element_lines(shown)}"
        target = shown[names.index(asked)]
        x, y = target.center
        assert step.info.action == {"type": "click", "x": x, "y": y}
