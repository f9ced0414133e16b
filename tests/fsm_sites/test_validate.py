"""Validation catches each kind of broken spec and names each problem's place by id."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from fsm_sites.engine.fullgraph import FullGraph
from fsm_sites.engine.machine import Machine, compile_site
from fsm_sites.errors import SpecInvalid
from fsm_sites.serving.sessions import SessionStore
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import check_spec, load_and_validate, validate_spec

EXAMPLE = Path(__file__).parents[2] / "fsm_sites" / "library" / "examples" / "tiny_shop.yaml"
CLINIC = EXAMPLE.parent / "clinic.yaml"


@pytest.fixture()
def data() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))


@pytest.fixture()
def clinic() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(CLINIC.read_text()))


def _transition(data: dict[str, Any], tid: str) -> dict[str, Any]:
    return next(t for t in data["transitions"] if t["id"] == tid)


def _messages(data: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate_spec(data)]


def test_examples_are_valid(data: dict[str, Any], clinic: dict[str, Any]) -> None:
    assert validate_spec(data) == []
    assert validate_spec(clinic) == []


def test_shape_error_names_the_item_by_id(data: dict[str, Any]) -> None:
    _transition(data, "open_lamp")["event"] = "swipe"
    del data["pages"][1]["title"]
    msgs = _messages(data)
    assert any(m.startswith("transitions.open_lamp.event:") for m in msgs), msgs
    assert any(m.startswith("pages.product_lamp.title:") for m in msgs), msgs


def test_dangling_element(data: dict[str, Any]) -> None:
    _transition(data, "to_checkout")["element"] = "buy_btn"
    assert "transitions.to_checkout.element: 'buy_btn' is not an element of page 'cart'" in _messages(data)[0]


def test_dangling_page_target_and_start(data: dict[str, Any]) -> None:
    _transition(data, "open_cart")["target"] = "basket"
    _transition(data, "open_lamp")["page"] = "nowhere"
    data["start_page"] = "index"
    msgs = _messages(data)
    assert any(m.startswith("transitions.open_cart.target: 'basket' is not a page") for m in msgs)
    assert any(m.startswith("transitions.open_lamp.page: 'nowhere' is not a page") for m in msgs)
    assert any(m.startswith("start_page:") and "'index'" in m for m in msgs)


def test_dangling_variable_in_condition_effect_and_goal(data: dict[str, Any]) -> None:
    _transition(data, "place")["when"][0]["var"] = "fullname"
    _transition(data, "pick_shipping")["effects"][0]["var"] = "ship"
    data["goals"][0]["conditions"][0]["var"] = "basket"
    msgs = _messages(data)
    assert any(m.startswith("transitions.place.when[0].var: 'fullname'") for m in msgs), msgs
    assert any(m.startswith("transitions.pick_shipping.effects[0].var: 'ship'") for m in msgs), msgs
    assert any(m.startswith("goals.lamp_in_cart.conditions[0].var: 'basket'") for m in msgs), msgs


def test_dangling_modal_parent_and_goal_page(data: dict[str, Any]) -> None:
    modal = next(p for p in data["pages"] if p.get("kind") == "modal")
    modal["parent"] = "payment"
    data["goals"][1]["page"] = "receipt"
    msgs = _messages(data)
    assert any(m.startswith("pages.confirm.parent:") and "'payment'" in m for m in msgs)
    assert any(m.startswith("goals.buy_two_express.page: 'receipt' is not a page") for m in msgs)


def test_duplicate_ids(data: dict[str, Any]) -> None:
    data["transitions"][1]["id"] = data["transitions"][0]["id"]
    data["pages"][0]["elements"][1]["id"] = "nav_cart"
    data["goals"].append(copy.deepcopy(data["goals"][0]))
    msgs = _messages(data)
    assert any(m.startswith("transitions.open_cart: duplicate transition 'open_cart'") for m in msgs)
    assert any(m.startswith("pages.home.elements.nav_cart: duplicate element") for m in msgs)
    assert any(m.startswith("goals.lamp_in_cart: duplicate goal 'lamp_in_cart'") for m in msgs)


def test_event_not_valid_for_kind(data: dict[str, Any]) -> None:
    t = _transition(data, "open_cart")
    t["event"], t["values"] = "select", ["x"]
    assert any(m.startswith("transitions.open_cart.event: a link sends ['click'], got 'select'") for m in _messages(data))


def test_value_outside_domain_prints_values_as_json(data: dict[str, Any]) -> None:
    _transition(data, "type_name")["values"] = ["Ada", "Grace"]
    data["variables"][0]["default"] = ["lamp", "sofa"]
    data["goals"][1]["conditions"][2]["value"] = "overnight"
    msgs = _messages(data)
    assert any(m.startswith("transitions.type_name.effects[0].value: 'Grace' is outside") for m in msgs), msgs
    assert any(m.startswith('variables.cart.default: ["lamp", "sofa"] is outside') for m in msgs), msgs
    assert any(m.startswith("goals.buy_two_express.conditions[2].value: 'overnight' is outside") for m in msgs)


def test_expression_names_and_types_are_checked(clinic: dict[str, Any]) -> None:
    _transition(clinic, "submit_booking")["when"] = "count(booking) < 4"
    _transition(clinic, "pick_day")["effects"] = [{"set": "form_day", "to": "form_time"}]
    clinic["goals"][0]["conditions"] = "{pet: 'rex', service: 'surgery', day: 'mon', time: '09:00'} in bookings"
    clinic["pages"][2]["title"] = "{pet.name}"
    msgs = _messages(clinic)
    assert any(m.startswith("transitions.submit_booking.when[0]: 'booking' is not a variable") for m in msgs), msgs
    assert any(m.startswith("transitions.pick_day.effects[0].value: '09:00' is outside") for m in msgs), msgs
    assert any(m.startswith("goals.rex_vaccination.conditions[0]:") and "'surgery'" in m for m in msgs), msgs
    assert any(m.startswith("pages.pet.title:") and "expected a record or map" in m for m in msgs), msgs


def test_types_and_parameters_are_checked(clinic: dict[str, Any]) -> None:
    clinic["types"][4]["fields"][0]["type"] = "animal"
    _transition(clinic, "open_rex")["args"] = {"pet": "'rex'", "size": "2"}
    clinic["starts"][0]["vars"]["bookings"][0]["day"] = "sun"
    msgs = _messages(clinic)
    assert any(m.startswith("types.booking.fields.pet.type: expected a type of") and "'animal'" in m for m in msgs), msgs
    msgs = _messages(yaml.safe_load(CLINIC.read_text()) | {"transitions": clinic["transitions"]})
    assert any(m.startswith("transitions.open_rex.args: expected the parameters ['pet']") for m in msgs), msgs


def test_nondeterministic_transitions_found_by_search(data: dict[str, Any]) -> None:
    data["transitions"].append({"id": "open_cart_again", "page": "home", "element": "nav_cart",
                                "target": "checkout", "description": "jump"})
    msgs = _messages(data)
    assert len(msgs) == 1 and msgs[0].startswith("transitions.open_cart_again: 'open_cart_again' and 'open_cart'")
    assert "both enabled" in msgs[0] and "in state home{" in msgs[0]


def test_exclusive_guards_are_not_nondeterministic(data: dict[str, Any]) -> None:
    _transition(data, "place")["when"] = [{"var": "name", "op": "nonempty"}]
    data["transitions"].append({"id": "place_nameless", "page": "checkout", "element": "place",
                                "when": [{"var": "name", "op": "empty"}], "description": "try"})
    assert _messages(data) == []


def test_unreachable_page(data: dict[str, Any]) -> None:
    data["pages"].append({"id": "about", "title": "About us"})
    assert _messages(data) == ["pages.about: page 'about' is unreachable from start page 'home'; add a transition that leads to it"]


def test_unreachable_goal(data: dict[str, Any]) -> None:
    data["goals"].append({"id": "three", "description": "three in cart",
                          "conditions": [{"var": "cart", "op": "ge", "value": 3}]})
    assert _messages(data) == ["goals.three: goal 'three' holds in no state reachable from the start: its condition "
                               "is false for every value its variables can reach (cart holds 0 to 2 items); change "
                               "the goal or the transitions"]


def test_unreachable_start_state(clinic: dict[str, Any]) -> None:
    clinic["starts"][0]["page"] = "settings"
    clinic["starts"][0]["vars"]["_toast"] = "cancel_appointment"  # only cancelling shows it: on Appointments
    assert any(m.startswith("starts.busy_week.vars._toast: '_toast' is not a variable") for m in _messages(clinic))
    del clinic["starts"][0]["vars"]["_toast"]
    clinic["starts"][0]["vars"]["bookings"] = []
    clinic["starts"][0]["vars"]["form_day"] = "fri"  # the form is cleared on leaving the booking page
    assert _messages(clinic) == ["starts.busy_week: start state 'busy_week' cannot be reached from the initial "
                                 "state; change its variables or the transitions"]


def test_a_check_too_large_to_decide_is_a_note_not_a_problem(clinic: dict[str, Any]) -> None:
    clinic["starts"][0]["vars"]["bookings"].append({"pet": "luna", "service": "checkup", "day": "mon", "time": "09:00"})
    _, report = check_spec(clinic, count_budget=1000)  # two bookings in one slot: only an exhaustive search shows it
    assert report.valid and any("could not decide whether start state 'busy_week'" in n for n in report.notes)


def test_state_count_error_names_the_variables_that_multiply_states(data: dict[str, Any]) -> None:
    data["max_states"] = 50
    msgs = _messages(data)
    assert len(msgs) == 1 and msgs[0].startswith("max_states: expected at most 50 reachable states")
    assert "these multiply them most:" in msgs[0] and "cart (" in msgs[0]


def test_report_counts_states_or_gives_a_lower_bound(data: dict[str, Any], clinic: dict[str, Any]) -> None:
    _, small = check_spec(data)
    assert (small.states, small.states_exact) == (152, True)
    assert small.goal_depths == {"lamp_in_cart": 2, "buy_two_express": 8}
    _, big = check_spec(clinic, count_budget=5000)
    assert (big.states, big.states_exact) == (5000, False)
    assert big.to_json()["reachable_states_at_least"] == 5000 and big.to_json()["valid"]


def test_load_and_validate_lists_every_problem(data: dict[str, Any], tmp_path: Path) -> None:
    _transition(data, "open_cart")["target"] = "basket"
    _transition(data, "add_lamp")["effects"][0]["var"] = "bag"
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecInvalid) as info:
        load_and_validate(path)
    assert len(info.value.problems) == 2
    assert "transitions.open_cart.target" in str(info.value) and "transitions.add_lamp.effects[0].var" in str(info.value)


def test_a_spec_file_is_parsed_and_compiled_once_and_never_explored(monkeypatch, tmp_path: Path) -> None:
    parsed, explored, built = [], [], []
    parse, explore, init = SiteSpec.model_validate, FullGraph.graph, Machine.__init__

    def counted_parse(cls, *args, **kwargs):
        parsed.append(args)
        return parse(*args, **kwargs)

    def counted_init(self, spec):
        built.append(spec)
        init(self, spec)

    monkeypatch.setattr(SiteSpec, "model_validate", classmethod(counted_parse))
    monkeypatch.setattr(Machine, "__init__", counted_init)
    monkeypatch.setattr(FullGraph, "graph", lambda self, **kw: explored.append(self) or explore(self, **kw))
    path = tmp_path / "shop.yaml"
    path.write_text(EXAMPLE.read_text().replace("Tiny Shop", "Once Shop"))  # a spec no test compiled yet
    spec = load_and_validate(path, use_cache=False)
    store = SessionStore()
    store.add_site(spec)
    store.create("tiny_shop", goal="lamp_in_cart")
    assert store.machines["tiny_shop"] is compile_site(spec)
    assert len(parsed) == 1 and len(built) == 1 and explored == []


def test_a_validated_file_is_not_checked_again(monkeypatch, tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(EXAMPLE.read_text())
    load_and_validate(path)
    assert list((tmp_path / ".fsm_cache").glob("tiny_shop-*.json"))
    import fsm_sites.validation.validate as validate

    monkeypatch.setattr(validate, "check_spec", lambda *a, **k: pytest.fail("validated again"))
    assert load_and_validate(path).name == "tiny_shop"
    path.write_text(EXAMPLE.read_text().replace("Tiny Shop", "Tinier Shop"))  # edited: checked anew
    monkeypatch.undo()
    assert load_and_validate(path).title == "Tinier Shop"
