"""Record fields may be free text (issue 23): "Add pet" stores the name that was typed. The
machine tells apart only the field's classes (finite states); the page shows what was typed."""

from __future__ import annotations

import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.render.page_model import describe_page
from fsm_sites.spec.site import SiteSpec
from fsm_sites.synthesis.tasks import synthesize_tasks
from fsm_sites.validation.validate import check_spec

PETS = """
name: pets
title: Pets
start_page: pets
types:
  - {name: species, type: enum, values: [dog, cat], labels: {dog: Dog, cat: Cat}}
  - name: pet
    type: record
    fields:
      - {name: name, type: text, values: [Mochi], other: Bella}
      - {name: species, type: species}
variables:
  - {name: new_name, type: text, values: [Mochi], other: Bella}
  - {name: new_species, type: species}
  - {name: pets, type: list, item: pet, max_len: 2, unique: false}
  - {name: picked, type: pet}
pages:
  - id: pets
    title: "Pets ({count(pets)})"
    elements:
      - {id: row, kind: text, label: "{it.name} ({it.species})", repeat: pets}
      - {id: open_row, kind: button, label: "Open {it.name}", repeat: pets}
      - {id: add, kind: button, label: Add pet}
  - id: detail
    title: "{picked.name}"
    elements:
      - {id: back, kind: link, label: Back}
  - id: form
    title: New pet
    elements:
      - {id: name, kind: text_input, label: Name, bind: new_name}
      - {id: species, kind: select, label: Species, bind: new_species}
      - {id: save, kind: button, label: Save}
transitions:
  - {id: add, page: pets, element: add, target: form, description: start adding a pet}
  - {id: open, page: pets, element: open_row, target: detail, effects: [{set: picked, to: it}],
     description: "open {it.name}"}
  - {id: back, page: detail, element: back, target: pets, description: go back}
  - {id: type_name, page: form, element: name, event: input, effects: [{set: new_name, to: value}],
     description: "type '$value' as the name"}
  - {id: pick_species, page: form, element: species, event: select, effects: [{set: new_species, to: value}],
     description: pick a species}
  - id: save
    page: form
    element: save
    when: "new_name != ''"
    target: pets
    effects: [{add: pets, item: "{name: new_name, species: new_species}"}, {clear: new_name}]
    description: save the pet
goals:
  - {id: mochi, description: add Mochi, conditions: "any(pets, it.name == 'Mochi')"}
"""


def _machine() -> Machine:
    return Machine(SiteSpec.model_validate(yaml.safe_load(PETS)))


def _walk(m: Machine, state: State, events: list[tuple[str, str, str | None]]) -> State:
    for element, event, value in events:
        fired = m.step(state, UIEvent(state.page, element, event, value))
        assert fired is not None, (state.key(), element, value)
        state = fired[1]
    return state


def _add(name: str, species: str = "dog") -> list[tuple[str, str, str | None]]:
    return [("add", "click", None), ("name", "input", name), ("species", "select", species), ("save", "click", None)]


def test_a_record_field_keeps_the_name_that_was_typed() -> None:
    m = _machine()
    state = _walk(m, m.initial, _add("Biscuit") + _add("mochi", "cat"))
    assert [dict(p)["name"] for p in state.get("pets")] == ["Biscuit", "Mochi"]  # a value that matters: its spelling
    assert m.views.text(state, "{pets}") == "Biscuit, Dog; Mochi, Cat"
    rows = [e["label"] for e in describe_page(m, state)["elements"] if e["id"] == "row"]
    assert rows == ["Biscuit (Dog)", "Mochi (Cat)"]
    # the machine tells apart only the classes: the typed name is the field's stand-in there
    assert [dict(p)["name"] for p in m.canonical(state).get("pets")] == ["Bella", "Mochi"]
    assert m.holds(state, ["any(pets, it.name == 'Mochi')"]) and m.distance(state, "mochi") == 0


def test_a_record_copied_from_a_row_carries_its_typed_field() -> None:
    m = _machine()
    state = _walk(m, m.initial, _add("Biscuit") + [("open_row", "click", "0")])
    assert state.page == "detail" and dict(state.get("picked"))["name"] == "Biscuit"
    assert m.views.text(state, m.pages["detail"].title) == "Biscuit"
    back = _walk(m, state, [("back", "click", None)])
    assert [dict(p)["name"] for p in back.get("pets")] == ["Biscuit"]  # untouched rows keep their text


def test_typed_fields_leave_the_state_space_finite_and_equal_to_the_oracles() -> None:
    m = _machine()
    typed = _walk(m, m.initial, _add("Biscuit"))
    oracle = _walk(m, m.initial, _add("Bella"))  # what the oracle types: the stand-in
    assert typed != oracle and m.canonical(typed) == m.canonical(oracle) == oracle
    assert m.distance(typed, "mochi") == m.distance(oracle, "mochi") == 3  # add, type Mochi, save
    report = check_spec(yaml.safe_load(PETS))[1]
    assert report.valid and not report.warnings, (report.problems, report.warnings)
    assert report.goal_status == {"mochi": "reachable"}


def test_a_record_field_of_text_is_typed_like_a_text_variable() -> None:
    data = yaml.safe_load(PETS)
    data["goals"][0]["conditions"] = "any(pets, it.name == 'Rex')"
    messages = [str(p) for p in check_spec(data)[1].problems]
    assert any("goals.mochi" in m and "'Rex', which is not a text value that matters (['Mochi'])" in m
               for m in messages), messages
    data = yaml.safe_load(PETS)
    data["types"][1]["fields"][0] = {"name": "name", "type": "list", "item": "species"}
    messages = [str(p) for p in check_spec(data)[1].problems]
    assert any(m.startswith("types.pet.fields.name: expected a bool, int, enum or text field, got list")
               for m in messages), messages


def test_synthesized_goals_never_name_text_typed_as_any_other() -> None:
    tasks = synthesize_tasks(SiteSpec.model_validate(yaml.safe_load(PETS)), 8, seed=1)
    structured = [t for t in tasks if t.goal_kind == "expr"]
    assert structured and all("Bella" not in t.goal for t in structured), [t.goal for t in structured]
    # the oracle's path to a state holding a typed pet goes through its stand-in
    assert any(t.goal_kind == "state" and '"name":"Bella"' in t.goal for t in tasks)
