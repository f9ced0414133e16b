"""Goals proved unreachable at any size, by bounds and guards (issue 23, bug 5): each goal
of a spec ends proved reachable, proved unreachable or undecided within the search budget."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from fsm_sites.engine.machine import Machine
from fsm_sites.generator import synthesize_site
from fsm_sites.library import EXAMPLES_DIR
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.bounds import Bounds, unreachable_because
from fsm_sites.validation.validate import check_spec
from tests.fsm_sites.test_cli import _app

VET = """
name: vet
title: Vet
start_page: home
types:
  - {name: pet, type: enum, values: [rex, milo, luna]}
  - {name: day, type: enum, values: [mon, tue, wed]}
variables:
  - {name: pets, type: list, item: pet, max_len: 3, default: [rex]}
  - {name: appointments, type: set, item: day, max_len: 2}
  - {name: phone, type: text, values: ["555"]}
  - {name: sms, type: bool}
pages:
  - id: home
    title: Home
    elements:
      - {id: add_pet, kind: select, label: Add a pet, options: [{value: milo}, {value: luna}]}
      - {id: book, kind: select, label: Book a day, options: [{value: mon}, {value: tue}, {value: wed}]}
      - {id: phone, kind: text_input, label: Phone, bind: phone}
      - {id: sms, kind: checkbox, label: Texts, bind: sms}
transitions:
  - {id: add_pet, page: home, element: add_pet, event: select, effects: [{add: pets, item: value}], description: add $value}
  - {id: book, page: home, element: book, event: select, effects: [{add: appointments, item: value}], description: book $value}
  # the number can be changed only while texts are off, and texts turned on only with a number
  - {id: type_phone, page: home, element: phone, event: input, when: "not sms", effects: [{set: phone, to: value}], description: type $value}
  - {id: sms_on, page: home, element: sms, event: check, when: "not sms and phone != ''", effects: [{set: sms, to: true}], description: texts on}
  - {id: sms_off, page: home, element: sms, event: uncheck, when: sms, effects: [{set: sms, to: false}], description: texts off}
goals:
  - {id: texts, description: turn on texts, conditions: sms}
  - {id: texts_no_phone, description: texts without a phone, conditions: "sms and phone == ''"}
  - {id: three_appointments, description: book three days, conditions: "count(appointments) > 2"}
  - {id: no_pets, description: have no pets, conditions: "count(pets) == 0"}
"""
UNREACHABLE = ["texts_no_phone", "three_appointments", "no_pets"]


def _vet() -> dict[str, Any]:
    return yaml.safe_load(VET)


def test_unreachable_goals_are_refused_by_bounds_and_guards_without_a_search() -> None:
    _, report = check_spec(_vet(), search_budget=1)  # a search this small decides nothing
    problems = {p.place: p.message for p in report.problems}
    assert sorted(problems) == sorted(f"goals.{g}" for g in UNREACHABLE)
    assert "appointments holds 0 to 2 items" in problems["goals.three_appointments"]
    assert "pets holds 1 to 3 items" in problems["goals.no_pets"]  # it starts with rex and never shrinks
    assert "no transition can make it true" in problems["goals.texts_no_phone"]
    assert report.goal_status == {"texts": "undecided", **{g: "unreachable" for g in UNREACHABLE}}
    assert not any("very large domains" in n for n in report.notes)
    assert any("--budget" in n for n in report.notes)
    _, report = check_spec(_vet())
    assert report.goal_status["texts"] == "reachable" and report.goal_depths["texts"] == 2


def test_a_goal_over_a_bound_is_refused_on_a_site_of_ten_million_states() -> None:
    data = yaml.safe_load((EXAMPLES_DIR / "clinic.yaml").read_text())
    data["goals"].append({"id": "five", "description": "book five", "conditions": "count(bookings) > 4"})
    _, report = check_spec(data, search_budget=2_000, count_budget=100)
    assert [p.place for p in report.problems] == ["goals.five"]
    assert report.goal_status["five"] == "unreachable"
    assert "bookings holds 0 to 4 items" in report.problems[0].message


def test_no_goal_of_a_curated_or_generated_site_is_proved_unreachable() -> None:
    """Soundness: the bounds over-approximate, so no goal that a path reaches is refused."""
    paths = sorted((EXAMPLES_DIR.parent / "sites").glob("*.yaml")) + sorted(EXAMPLES_DIR.glob("*.yaml"))
    specs = [SiteSpec.model_validate(yaml.safe_load(p.read_text())) for p in paths]
    specs += [synthesize_site(seed, d) for seed, d in ((0, "easy"), (1, "medium"), (2, "hard"))]
    for spec in specs:
        machine = Machine(spec)
        bounds = Bounds(machine)
        for goal in spec.goals:
            assert unreachable_because(machine, bounds, machine.goal_predicate(goal.id)) is None, (spec.name, goal.id)


def test_cli_validate_takes_a_search_budget_and_says_what_each_goal_is(tmp_path: Path) -> None:
    spec = tmp_path / "vet.yaml"
    spec.write_text(VET.replace("title: Vet", "title: Vet (CLI)"))  # not the machine the tests above searched on
    small = CliRunner().invoke(_app(), ["sites", "validate", "--budget", "1", str(spec)])
    assert small.exit_code == 1
    assert "goals proved unreachable: texts_no_phone, three_appointments, no_pets" in small.output
    assert "goals undecided within the search budget of 1 states (raise --budget): texts" in small.output
    data = copy.deepcopy(_vet())
    data["goals"] = [g for g in data["goals"] if g["id"] not in UNREACHABLE]
    spec.write_text(yaml.safe_dump(data))
    ok = CliRunner().invoke(_app(), ["sites", "validate", "--json", "--budget", "100", str(spec)])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["goal_status"] == {"texts": "reachable"}
    plain = CliRunner().invoke(_app(), ["sites", "validate", str(spec)])
    assert "goals proved reachable: texts (2 steps)" in plain.output
