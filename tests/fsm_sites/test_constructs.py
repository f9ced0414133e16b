"""The new constructs in the engine, each with hand-checked answers: free text, records in
sets and lists, maps, expressions, parameterized pages, toasts, disabled controls, keys."""

from __future__ import annotations

import pytest
import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.errors import SpecInvalid
from fsm_sites.spec.expr import ExprSyntaxError, parse_expr, unparse
from fsm_sites.spec.site import SiteSpec
from fsm_sites.spec.types import Rec
from fsm_sites.validation.validate import validate_spec

SPEC = """
name: notes
title: Notes
start_page: home
types:
  - {name: tag, type: enum, values: [work, home, fun], labels: {work: Work, home: Home, fun: Fun}}
  - name: note
    type: record
    fields: [{name: tag, type: tag}, {name: star, type: bool}]
variables:
  - {name: who, type: text, values: [Ada], label: name}
  - {name: notes, type: set, item: note, max_len: 2}
  - {name: log, type: list, item: tag, max_len: 3}
  - {name: count_by, type: map, keys: tag, value: {type: int, min: 0, max: 2}}
  - {name: form_tag, type: tag}
pages:
  - id: home
    title: "Hello {who} ({count(notes)} notes)"
    elements:
      - {id: who, kind: text_input, label: Name, bind: who}
      - {id: add, kind: button, label: Add}
      - {id: star_all, kind: button, label: Star all, disabled_when: "count(notes) == 0"}
      - {id: drop_work, kind: button, label: Drop work notes}
      - {id: tag, kind: select, label: Tag, bind: form_tag}
      - {id: row, kind: text, label: "{it.tag}", repeat: notes}
      - {id: open, kind: button, label: "Open {it.tag}", repeat: notes}
  - id: tagged
    title: "{t}"
    route: /tags/{t}
    params: [{name: t, type: tag}]
    elements:
      - {id: bump, kind: button, label: "+1"}
      - {id: back, kind: link, label: Back}
transitions:
  - {id: type_who, page: home, element: who, event: input, effects: [{set: who, to: value}], description: "type '$value'"}
  - {id: pick, page: home, element: tag, event: select, effects: [{set: form_tag, to: value}], description: pick $value}
  - id: add
    page: home
    element: add
    when: "not ({tag: form_tag, star: false} in notes) and count(notes) < 2"
    effects: [{add: notes, item: "{tag: form_tag, star: false}"}, {add: log, item: form_tag}]
    toast: "Added {form_tag}"
    description: add a note
  - {id: star_all, page: home, element: star_all, effects: [{update: notes, where: "true", fields: {star: "true"}}], description: star all}
  - {id: drop_work, page: home, element: drop_work, effects: [{remove: notes, where: "it.tag == 'work'"}], description: drop work notes}
  - {id: open, page: home, element: open, target: tagged, args: {t: it.tag}, description: "open {it.tag}"}
  - {id: bump, page: tagged, element: bump, when: "count_by[t] < 2", effects: [{set: "count_by[t]", to: "count_by[t] + 1"}], description: bump}
  - {id: back, page: tagged, element: back, target: home, description: back}
goals:
  - {id: two_fun, description: bump fun twice, conditions: "count_by['fun'] == 2 and sum(count_by) == 2"}
  - {id: ada_work, description: a starred work note by Ada, conditions: ["who == 'Ada'", "{tag: 'work', star: true} in notes"]}
  - {id: on_fun, description: the fun page, page: tagged(fun)}
"""


@pytest.fixture(scope="module")
def m() -> Machine:
    return Machine(SiteSpec.model_validate(yaml.safe_load(SPEC)))


def _go(m: Machine, state: State, element: str, event: str = "click", value: str | None = None) -> State:
    fired = m.step(state, UIEvent(state.page, element, event, value))
    assert fired is not None, (state.key(), element, value)
    return fired[1]


def test_free_text_is_kept_as_typed_and_classified(m: Machine) -> None:
    bob = _go(m, m.initial, "who", "input", "  Bob  Smith ")
    assert bob.get("who") == "Bob Smith" and m.canonical(bob).get("who") == "something else"
    assert _go(m, m.initial, "who", "input", "ada").get("who") == "Ada"  # a value that matters, in its spelling
    assert sorted(e.value for e, _ in m.enabled(m.initial) if e.element == "who") == ["", "Ada", "something else"]
    assert m.views.text(bob, "{who}") == "Bob Smith"
    assert m.distance(bob, "ada_work") == m.distance(m.canonical(bob), "ada_work")
    data = yaml.safe_load(SPEC)
    data["goals"].append({"id": "bob", "description": "x", "conditions": "who == 'Bob'"})
    assert any("'Bob', which is not a text value that matters" in str(p) for p in validate_spec(data))


def test_sets_of_records_add_remove_update_and_stay_canonical(m: Machine) -> None:
    s = _go(m, m.initial, "tag", "select", "home")
    s = _go(m, s, "add")
    assert s.get("notes") == (Rec.of({"tag": "home", "star": False}),) and s.get("log") == ("home",)
    assert m.step(s, UIEvent("home", "add", "click")) is None  # the same note again: refused
    s = _go(m, _go(m, s, "tag", "select", "work"), "add")
    assert [dict(n)["tag"] for n in s.get("notes")] == ["work", "home"]  # canonical: the enum's order
    assert s.get("log") == ("home", "work")  # a list keeps the order items came in
    assert m.step(_go(m, s, "tag", "select", "fun"), UIEvent("home", "add", "click")) is None  # full
    starred = _go(m, s, "star_all")
    assert all(dict(n)["star"] for n in starred.get("notes"))
    assert [dict(n)["tag"] for n in _go(m, starred, "drop_work").get("notes")] == ["home"]


def test_maps_parameter_pages_routes_and_repeated_copies(m: Machine) -> None:
    s = _go(m, _go(m, m.initial, "tag", "select", "fun"), "add")
    assert m.views.instances(s, "open") == [("0", Rec.of({"tag": "fun", "star": False}))]
    fun = _go(m, s, "open", value="0")
    assert fun.page == "tagged(fun)" and fun.page_id == "tagged" and m.views.route(fun) == "/tags/fun"
    assert m.views.text(fun, m.pages["tagged"].title) == "Fun"
    twice = _go(m, _go(m, fun, "bump"), "bump")
    assert twice.get("count_by") == Rec.of({"work": 0, "home": 0, "fun": 2})
    assert m.step(twice, UIEvent("tagged(fun)", "bump", "click")) is None  # guard: at most 2
    assert m.goal_predicate("two_fun")(twice)
    assert m.goal_predicate("on_fun")(fun) and not m.goal_predicate("on_fun")(s)
    assert m.distance(m.initial, "two_fun") == 5  # pick fun, add it, open it, +1, +1
    assert m.step(s, UIEvent("home", "open", "click", "5")) is None  # no such copy


def test_toasts_last_until_the_next_transition(m: Machine) -> None:
    s = _go(m, _go(m, m.initial, "tag", "select", "work"), "add")
    assert m.views.toast(s) == "Added Work"
    assert m.step(s, UIEvent("home", "star_all", "check")) is None and m.views.toast(s) == "Added Work"
    assert m.views.toast(_go(m, s, "star_all")) is None


def test_disabled_controls_from_preconditions_and_disabled_when(m: Machine) -> None:
    star = m.elements[("home", "star_all")]
    add = m.elements[("home", "add")]
    assert m.views.disabled(m.initial, star) and not m.views.disabled(m.initial, add)
    s = _go(m, m.initial, "add")
    assert not m.views.disabled(s, star) and m.views.disabled(s, add)  # the same note is there: Add cannot fire


def test_state_keys_round_trip_records_maps_and_old_flat_keys(m: Machine) -> None:
    s = _go(m, _go(m, m.initial, "add"), "open", value="0")
    assert State.from_key(s.key()) == s and '"notes":[{"star":false,"tag":"work"}]' in s.key()
    old = 'cart{"cart":["lamp"],"name":"","ordered":false,"qty":1,"shipping":"standard"}'
    assert State.from_key(old).key() == old


def test_expressions_parse_into_data_and_back() -> None:
    for text in ["count(notes, it.tag == 'work') > 1 and not star", "{tag: 'a', star: true} in notes",
                 "cart['mug'] + 2 * qty - 1 >= min(a, 3)", "day not in ['sat', 'sun'] or x.y"]:
        assert parse_expr(unparse(parse_expr(text))) == parse_expr(text)
    with pytest.raises(ExprSyntaxError, match="column 8"):
        parse_expr("a == (b")
    with pytest.raises(ExprSyntaxError, match="expected a function of"):
        parse_expr("eval('1')")


def test_a_machine_refuses_a_spec_with_static_problems() -> None:
    data = yaml.safe_load(SPEC)
    data["transitions"][2]["effects"][0]["item"] = "{tag: form_tag}"
    with pytest.raises(SpecInvalid, match=r"transitions\.add\.effects\[0\]"):
        Machine(SiteSpec.model_validate(data))
