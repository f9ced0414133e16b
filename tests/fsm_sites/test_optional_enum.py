""""Nothing chosen yet" is a first-class value (issue 23): an `optional: true` enum starts at
`none`, a guard `x != none` narrows it to a chosen value, and only then may it fill a page
parameter or a required record field; so neither ever carries `''`."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.render.page_model import describe_page
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import check_spec

VET = """
name: vet
title: Vet
start_page: pick
types:
  - {name: pet, type: enum, values: [rex, milo], labels: {rex: Rex, milo: Milo}}
  - {name: extra, type: enum, values: [bath, trim], labels: {bath: Bath, trim: Nail trim}}
  - name: booking
    type: record
    fields: [{name: pet, type: pet}, {name: extra, type: extra, optional: true}]
variables:
  - {name: chosen, type: pet, optional: true}
  - {name: extra, type: extra, optional: true}
  - {name: bookings, type: set, item: booking, max_len: 2}
pages:
  - id: pick
    title: "Bookings: {bookings}"
    elements:
      - {id: pet, kind: select, label: Pet, bind: chosen}
      - {id: extra, kind: select, label: Extra, bind: extra}
      - {id: next, kind: button, label: Next, disabled_when: "chosen == none"}
  - id: book
    title: "Book for {pet}"
    route: /book/{pet}
    params: [{name: pet, type: pet}]
    elements:
      - {id: confirm, kind: button, label: Confirm}
transitions:
  - {id: choose, page: pick, element: pet, event: select, effects: [{set: chosen, to: value}], description: choose a pet}
  - {id: add_extra, page: pick, element: extra, event: select, effects: [{set: extra, to: value}],
     description: choose an extra}
  - {id: next, page: pick, element: next, target: book, args: {pet: chosen}, description: go on}
  - id: confirm
    page: book
    element: confirm
    target: pick
    effects: [{add: bookings, item: "{pet: pet, extra: extra}"}, {clear: chosen}, {clear: extra}]
    description: book
goals:
  - {id: rex_booked, description: book Rex, conditions: "any(bookings, it.pet == 'rex' and it.extra == none)"}
"""


def _data() -> dict[str, Any]:
    return yaml.safe_load(VET)


def _messages(data: dict[str, Any]) -> list[str]:
    return [str(p) for p in check_spec(data)[1].problems]


def _walk(m: Machine, state: State, events: list[tuple[str, str, str | None]]) -> State:
    for element, event, value in events:
        fired = m.step(state, UIEvent(state.page, element, event, value))
        assert fired is not None, (state.key(), element, value)
        state = fired[1]
    return state


def test_nothing_chosen_is_the_start_and_is_never_an_option_or_a_parameter() -> None:
    m = Machine(SiteSpec.model_validate(_data()))
    assert m.initial.get("chosen") == "" and m.holds(m.initial, ["chosen == none", "extra == none"])
    select = next(e for e in describe_page(m, m.initial)["elements"] if e["id"] == "pet")
    assert [o["value"] for o in select["options"]] == ["rex", "milo"]  # "nothing" is not a choice
    assert m.step(m.initial, UIEvent("pick", "next", "click")) is None  # disabled while nothing is chosen
    assert m.step(m.initial, UIEvent("pick", "pet", "select", "")) is None
    state = _walk(m, m.initial, [("pet", "select", "rex"), ("next", "click", None)])
    assert state.page == "book(rex)" and m.views.route(state) == "/book/rex"
    assert {s.page for s in m.graphs.graph().states} == {"pick", "book(rex)", "book(milo)"}  # never book()
    done = _walk(m, state, [("confirm", "click", None)])
    assert m.views.text(done, m.pages["pick"].title) == "Bookings: Rex"  # the unset extra shows nothing
    assert m.distance(m.initial, "rex_booked") == 3


def test_a_guard_that_proves_a_choice_lets_it_fill_a_parameter() -> None:
    data = _data()
    next_button = data["pages"][0]["elements"][2]
    del next_button["disabled_when"]
    assert any(m.startswith("transitions.next.args.pet: expected one of ['rex', 'milo'], got 'chosen', which "
                            "may be none (nothing chosen); guard the transition with `when: \"chosen != none\"`")
               for m in _messages(data)), _messages(data)
    data["transitions"][2]["when"] = "chosen != none"
    assert _messages(data) == []
    del data["transitions"][2]["when"]  # a disabled_when that lists what is still unchosen proves each chosen
    next_button["disabled_when"] = "count(bookings) == 2 or chosen == none"
    assert _messages(data) == []
    cleared = copy.deepcopy(data)  # an effect that writes the variable ends what the guard proved
    cleared["transitions"][2]["effects"] = [{"clear": "chosen"}]
    assert any(m.startswith("transitions.next.args.pet: expected one of") for m in _messages(cleared))


def test_a_required_record_field_takes_a_choice_only_where_it_is_proved() -> None:
    data = _data()
    data["transitions"][3]["effects"][0]["item"] = "{pet: pet, extra: extra}"
    data["types"][2]["fields"][1].pop("optional")
    data["goals"][0]["conditions"] = "any(bookings, it.pet == 'rex')"
    messages = _messages(data)
    assert any(m.startswith("transitions.confirm.effects[0].value: field 'extra': expected one of ['bath', 'trim'], "
                            "got 'extra', which may be none") for m in messages), messages
    data["transitions"][3]["when"] = "extra != none"
    assert _messages(data) == []


def test_none_and_optional_are_refused_where_they_mean_nothing() -> None:
    data = _data()
    data["goals"][0]["conditions"] = "any(bookings, it.pet == none)"
    assert any(m.startswith("goals.rex_booked") and "none (nothing chosen), but one of ['rex', 'milo'] has no such "
               "value; declare the type `optional: true`" in m for m in _messages(data)), _messages(data)
    data = _data()
    data["variables"][2]["optional"] = True
    assert any(m.startswith("variables.bookings.optional: expected `optional: true` only on an enum (a choice "
                            "that may be none yet), got set")
               for m in _messages(data)), _messages(data)
