"""Task synthesis: oracle paths solve their goals, instructions vary, JSONL round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_sites.engine.machine import Machine
from fsm_sites.library import load_site
from fsm_sites.synthesis.tasks import TaskSpec, load_tasks, save_tasks, synthesize_tasks


@pytest.fixture(scope="module")
def shop_tasks() -> list[TaskSpec]:
    return synthesize_tasks(load_site("shop"), 30, seed=7)


def test_oracle_paths_reach_their_goals(shop_tasks: list[TaskSpec]) -> None:
    machine = Machine(load_site("shop"))
    assert len(shop_tasks) == 30
    for task in shop_tasks:
        goal = task.goal_predicate(machine)
        state = task.start()
        assert not goal(state)
        for edge in task.oracle_edges():
            fired = machine.step(state, edge.to_event())
            assert fired is not None, (task.id, edge)
            state = fired[1]
        assert goal(state)
        assert task.difficulty == len(task.oracle_path) == machine.distance(task.start(), goal)


def test_named_goals_come_first_then_states_and_structured_goals(shop_tasks: list[TaskSpec]) -> None:
    kinds = [t.goal_kind for t in shop_tasks]
    n_named = len(load_site("shop").goals)
    assert kinds[:n_named] == ["named"] * n_named and set(kinds[n_named:]) == {"state", "expr"}
    assert len({t.id for t in shop_tasks}) == len(shop_tasks)
    assert len({t.difficulty for t in shop_tasks}) >= 5  # spread over depths


def test_instructions_use_descriptions_and_several_phrasings(shop_tasks: list[TaskSpec]) -> None:
    machine = Machine(load_site("shop"))
    state_tasks = [t for t in shop_tasks if t.goal_kind == "state"]
    assert len({t.instruction.split()[0] for t in shop_tasks if t.goal_kind == "expr"}) >= 2
    openings = {t.instruction.split()[0] for t in state_tasks}
    assert len(openings) >= 3
    from fsm_sites.synthesis.tasks import describe_edge

    for task in state_tasks:
        state = task.start()
        for edge in task.oracle_edges()[:-1]:
            state = machine.step(state, edge.to_event())[1]
        description = describe_edge(machine, task.oracle_edges()[-1], state)
        assert description.lower() in task.instruction.lower()
        assert "{" not in task.instruction
    assert all("$value" not in t.instruction for t in shop_tasks)


def test_deterministic_per_seed() -> None:
    spec = load_site("mail")
    assert synthesize_tasks(spec, 12, seed=1) == synthesize_tasks(spec, 12, seed=1)
    assert synthesize_tasks(spec, 12, seed=1) != synthesize_tasks(spec, 12, seed=2)


def test_jsonl_round_trip(shop_tasks: list[TaskSpec], tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    assert save_tasks(shop_tasks, path) == len(shop_tasks)
    assert load_tasks(path) == shop_tasks
    path.write_text(path.read_text() + '{"id": 1}\n')
    with pytest.raises(ValueError, match=f"tasks.jsonl:{len(shop_tasks) + 1}: expected a TaskSpec"):
        load_tasks(path)


def test_a_step_names_an_option_by_the_label_the_page_shows() -> None:
    from fsm_sites.synthesis.tasks import describe_edge
    from tests.fsm_sites.widgets_spec import widgets_spec

    machine = Machine(widgets_spec())
    edges = [e for s in machine.graphs.graph().states for e, _ in machine.enabled(s)]
    large = next(e for e in edges if e.element == "size" and e.value == "l")
    assert describe_edge(machine, large) == "choose size Large"  # the spec says "choose size $value"
    typed = next(e for e in edges if e.element == "city")
    assert typed.value and typed.value in describe_edge(machine, typed)  # text to type: verbatim


@pytest.fixture(scope="module")
def clinic():
    from fsm_sites.library import load_site

    return load_site("clinic")


def _replay(machine: Machine, task: TaskSpec) -> None:
    goal = task.goal_predicate(machine)
    state = task.start()
    assert not goal(state)
    for edge in task.oracle_edges():
        fired = machine.step(state, edge.to_event())
        assert fired is not None, (task.id, edge)
        state = fired[1]
    assert goal(state)


def test_structured_goals_name_records_and_are_solved(clinic) -> None:
    from fsm_sites.engine.machine import compile_site

    machine = compile_site(clinic)
    tasks = synthesize_tasks(clinic, 16, seed=3)
    structured = [t for t in tasks if t.goal_kind == "expr"]
    assert len(structured) >= 3
    for task in tasks:
        _replay(machine, task)
    words = " ".join(t.instruction for t in structured)
    assert "appointments" in words and any(day in words for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"))
    assert all(t.goal.startswith("expr:") and "bookings" in t.goal for t in structured)


def test_tasks_start_where_asked(clinic) -> None:
    from fsm_sites.engine.machine import compile_site

    machine = compile_site(clinic)
    named = synthesize_tasks(clinic, 4, seed=1, start="busy_week")
    assert named and {t.start_state for t in named} == {machine.named_start("busy_week").key()}
    drawn = synthesize_tasks(clinic, 8, seed=1, start="random")
    assert len({t.start_state for t in drawn}) >= 3
    for task in named + drawn:
        _replay(machine, task)
    with pytest.raises(ValueError, match="expected a start state reachable"):
        synthesize_tasks(clinic, 2, start=machine.initial.with_page("book(rex)").with_vars({"form_day": "fri"}).with_page("home").key())


def test_a_goal_that_names_its_start_begins_there(clinic) -> None:
    """`cancel_milo_grooming` names `start: busy_week`: validation measures it from there, and
    its task, its library task and its session begin there with no global start."""
    from fsm_sites.engine.machine import compile_site
    from fsm_sites.serving.sessions import SessionStore
    from fsm_sites.validation.validate import check_spec
    from harness.tasks.fsm import goal_tasks

    machine = compile_site(clinic)
    busy = machine.named_start("busy_week").key()
    task = next(t for t in synthesize_tasks(clinic, 6, seed=0) if t.goal == "cancel_milo_grooming")
    assert task.start_state == busy and task.difficulty == 1
    _replay(machine, task)
    assert next(t for t in goal_tasks(clinic, machine) if t.goal == "cancel_milo_grooming").start_state == busy
    store = SessionStore()
    store.add_site(clinic)
    assert store.create("clinic", goal="cancel_milo_grooming").state.key() == busy
    data = clinic.model_dump(mode="json", exclude_defaults=True)
    next(g for g in data["goals"] if g["id"] == "cancel_milo_grooming")["start"] = "nope"
    problems = [str(p) for p in check_spec(data)[1].problems]
    assert problems == ["goals.cancel_milo_grooming.start: expected one of the start states ['busy_week'], got "
                        "'nope'; name one declared under `starts`"]


def test_a_repeated_element_step_is_described_by_its_item(clinic) -> None:
    from fsm_sites.engine.machine import compile_site
    from fsm_sites.engine.state import UIEvent
    from fsm_sites.synthesis.tasks import describe_edge

    machine = compile_site(clinic)
    state = machine.named_start("busy_week")
    edge, _ = machine.step(state, UIEvent("appointments", "cancel_row", "click", "1"))
    assert describe_edge(machine, edge, state) == "cancel Milo's Grooming on Tuesday at 11:00"
