"""Validation catches each kind of broken spec and names the place of each problem."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from fsm_sites.engine import Machine, compile_site
from fsm_sites.errors import SpecInvalid
from fsm_sites.sessions import SessionStore
from fsm_sites.spec import SiteSpec
from fsm_sites.validate import load_and_validate, validate_spec

EXAMPLE = Path(__file__).parents[2] / "fsm_sites" / "library" / "examples" / "tiny_shop.yaml"


@pytest.fixture()
def data() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))


def _tindex(data: dict[str, Any], tid: str) -> int:
    return next(i for i, t in enumerate(data["transitions"]) if t["id"] == tid)


def _messages(data: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate_spec(data)]


def test_example_is_valid(data: dict[str, Any]) -> None:
    assert validate_spec(data) == []


def test_shape_error_names_field(data: dict[str, Any]) -> None:
    data["transitions"][2]["event"] = "hover"
    del data["pages"][1]["title"]
    msgs = _messages(data)
    assert any(m.startswith("transitions[2].event:") for m in msgs)
    assert any(m.startswith("pages[1].title:") for m in msgs)


def test_dangling_element(data: dict[str, Any]) -> None:
    i = _tindex(data, "to_checkout")
    data["transitions"][i]["element"] = "buy_btn"
    assert f"transitions[{i}].element: 'buy_btn' is not an element of page 'cart'" in _messages(data)[0]


def test_dangling_page_target_and_start(data: dict[str, Any]) -> None:
    data["transitions"][0]["target"] = "basket"
    data["transitions"][1]["page"] = "nowhere"
    data["start_page"] = "index"
    msgs = _messages(data)
    assert any(m.startswith("transitions[0].target: 'basket' is not a page") for m in msgs)
    assert any(m.startswith("transitions[1].page: 'nowhere' is not a page") for m in msgs)
    assert any(m.startswith("start_page:") and "'index'" in m for m in msgs)


def test_dangling_variable_in_condition_effect_and_goal(data: dict[str, Any]) -> None:
    i = _tindex(data, "place")
    data["transitions"][i]["when"][0]["var"] = "fullname"
    data["transitions"][i - 1]["effects"][0]["var"] = "ship"
    data["goals"][0]["conditions"][0]["var"] = "basket"
    msgs = _messages(data)
    assert any(m.startswith(f"transitions[{i}].when[0].var: 'fullname'") for m in msgs)
    assert any(m.startswith(f"transitions[{i - 1}].effects[0].var: 'ship'") for m in msgs)
    assert any(m.startswith("goals[0].conditions[0].var: 'basket'") for m in msgs)


def test_dangling_modal_parent_and_goal_page(data: dict[str, Any]) -> None:
    modal = next(i for i, p in enumerate(data["pages"]) if p.get("kind") == "modal")
    data["pages"][modal]["parent"] = "payment"
    data["goals"][1]["page"] = "receipt"
    msgs = _messages(data)
    assert any(m.startswith(f"pages[{modal}].parent:") and "'payment'" in m for m in msgs)
    assert any(m.startswith("goals[1].page: 'receipt' is not a page") for m in msgs)


def test_duplicate_ids(data: dict[str, Any]) -> None:
    data["transitions"][1]["id"] = data["transitions"][0]["id"]
    data["pages"][0]["elements"][1]["id"] = "nav_cart"
    data["goals"].append(copy.deepcopy(data["goals"][0]))
    msgs = _messages(data)
    assert any(m.startswith("transitions[1]: duplicate transition 'open_cart'") for m in msgs)
    assert any(m.startswith("pages[0].elements[1]: duplicate element") for m in msgs)
    assert any(m.startswith("goals[2]: duplicate goal 'lamp_in_cart'") for m in msgs)


def test_event_not_valid_for_kind(data: dict[str, Any]) -> None:
    i = _tindex(data, "open_cart")
    data["transitions"][i]["event"] = "select"
    data["transitions"][i]["values"] = ["x"]
    msgs = _messages(data)
    assert any(m.startswith(f"transitions[{i}].event: a link sends ['click'], got 'select'") for m in msgs)


def test_value_outside_domain(data: dict[str, Any]) -> None:
    i = _tindex(data, "type_name")
    data["transitions"][i]["values"] = ["Ada", "Grace"]
    data["variables"][1]["default"] = 7
    data["goals"][1]["conditions"][2]["value"] = "overnight"
    msgs = _messages(data)
    assert any(m.startswith(f"transitions[{i}].effects[0].value: 'Grace' is outside") for m in msgs)
    assert any(m.startswith("variables[1].default: 7 is outside") for m in msgs)
    assert any(m.startswith("goals[1].conditions[2].value: 'overnight' is outside") for m in msgs)


def test_nondeterministic_transitions(data: dict[str, Any]) -> None:
    data["transitions"].append({"id": "open_cart_again", "page": "home", "element": "nav_cart",
                                "target": "checkout", "description": "jump"})
    msgs = _messages(data)
    n = len(data["transitions"]) - 1
    assert len(msgs) == 1 and msgs[0].startswith(f"transitions[{n}]: 'open_cart_again' and 'open_cart'")
    assert "both enabled" in msgs[0]


def test_unreachable_page(data: dict[str, Any]) -> None:
    data["pages"].append({"id": "about", "title": "About us"})
    n = len(data["pages"]) - 1
    assert _messages(data) == [f"pages[{n}]: page 'about' is unreachable from start page 'home'"]


def test_unreachable_goal(data: dict[str, Any]) -> None:
    data["goals"].append({"id": "three", "description": "three in cart",
                          "conditions": [{"var": "cart", "op": "ge", "value": 3}]})
    assert _messages(data) == ["goals[2]: goal 'three' holds in no state reachable from the start"]


def test_graph_too_large(data: dict[str, Any]) -> None:
    data["max_states"] = 50
    msgs = _messages(data)
    assert len(msgs) == 1 and msgs[0].startswith("max_states: expected at most 50 reachable states")


def test_load_and_validate_lists_every_problem(data: dict[str, Any], tmp_path: Path) -> None:
    data["transitions"][0]["target"] = "basket"
    data["transitions"][3]["effects"][0]["var"] = "bag"
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecInvalid) as info:
        load_and_validate(path)
    assert len(info.value.problems) == 2
    assert "transitions[0].target" in str(info.value) and "transitions[3].effects[0].var" in str(info.value)


def test_a_spec_file_is_parsed_and_explored_once_from_validation_to_server(monkeypatch) -> None:
    parsed, explored = [], []
    parse, explore = SiteSpec.model_validate, Machine.graph

    def counted_parse(cls, *args, **kwargs):
        parsed.append(args)
        return parse(*args, **kwargs)

    def counted_graph(self, **kwargs):
        explored.append(self)
        return explore(self, **kwargs)

    monkeypatch.setattr(SiteSpec, "model_validate", classmethod(counted_parse))
    monkeypatch.setattr(Machine, "graph", counted_graph)
    spec = load_and_validate(EXAMPLE)
    store = SessionStore()
    store.add_site(spec)
    store.create("tiny_shop", goal="lamp_in_cart")
    assert store.machines["tiny_shop"] is compile_site(spec)
    assert len(parsed) == 1 and {id(m) for m in explored} == {id(store.machines["tiny_shop"])}
