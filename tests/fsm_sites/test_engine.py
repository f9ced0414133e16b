"""The pure engine on the documented example site, with hand-checked answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_sites.engine.machine import Edge, Machine, transition
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.errors import StateGraphTooLarge, UnknownGoal
from fsm_sites.spec.site import Condition, Effect, SiteSpec, Transition, load_spec

EXAMPLE = Path(__file__).parents[2] / "fsm_sites" / "library" / "examples" / "tiny_shop.yaml"


@pytest.fixture(scope="module")
def machine() -> Machine:
    return Machine(load_spec(EXAMPLE))


def test_initial_state_holds_defaults(machine: Machine) -> None:
    s = machine.initial
    assert s.page == "home"
    assert dict(s.vars) == {"cart": (), "qty": 1, "name": "", "shipping": "standard", "ordered": False}


def test_step_follows_click_and_effects(machine: Machine) -> None:
    s = machine.initial
    edge, s = machine.step(s, UIEvent("home", "lamp", "click"))
    assert edge == Edge("open_lamp", "home", "lamp", "click", None) and s.page == "product_lamp"
    _, s = machine.step(s, UIEvent("product_lamp", "add", "click"))
    assert s.page == "cart" and s.get("cart") == ("lamp",)


def test_event_on_other_page_or_unknown_element_fires_nothing(machine: Machine) -> None:
    s = machine.initial
    assert machine.step(s, UIEvent("cart", "back", "click")) is None
    assert machine.step(s, UIEvent("home", "promo", "click")) is None
    assert machine.step(s, UIEvent("home", "nope", "click")) is None


def test_invisible_element_gates_event(machine: Machine) -> None:
    cart_empty = machine.initial.with_page("cart")
    assert [e.id for e in machine.views.visible_elements(cart_empty)] == ["back"]
    assert machine.step(cart_empty, UIEvent("cart", "checkout", "click")) is None
    full = cart_empty.with_vars({"cart": ("mug",)})
    assert machine.step(full, UIEvent("cart", "checkout", "click")) is not None


def test_input_values_and_select_options(machine: Machine) -> None:
    s = machine.initial.with_page("checkout")
    assert machine.step(s, UIEvent("checkout", "name", "input", "Bob")) is None
    _, typed = machine.step(s, UIEvent("checkout", "name", "input", "Ada"))
    assert typed.get("name") == "Ada"
    _, chosen = machine.step(s, UIEvent("checkout", "shipping", "select", "express"))
    assert chosen.get("shipping") == "express"
    values = sorted(str(e.value) for e, _ in machine.enabled(s) if e.element == "shipping")
    assert values == ["express", "standard"]


def test_precondition_blocks_transition(machine: Machine) -> None:
    s = machine.initial.with_page("checkout")
    assert machine.step(s, UIEvent("checkout", "place", "click")) is None
    assert machine.step(s.with_vars({"name": "Ada"}), UIEvent("checkout", "place", "click")) is not None


def test_increment_clamps_and_append_ignores_duplicates(machine: Machine) -> None:
    s = machine.initial.with_page("cart").with_vars({"cart": ("lamp",), "qty": 3})
    _, after = machine.step(s, UIEvent("cart", "more", "click"))
    assert after.get("qty") == 3
    lamp = machine.initial.with_page("product_lamp").with_vars({"cart": ("lamp",)})
    _, again = machine.step(lamp, UIEvent("product_lamp", "add", "click"))
    assert again.get("cart") == ("lamp",)


def test_clear_restores_defaults(machine: Machine) -> None:
    s = machine.initial.with_page("done").with_vars({"cart": ("mug",), "qty": 2, "ordered": True})
    _, after = machine.step(s, UIEvent("done", "home", "click"))
    assert after == machine.initial.with_vars({"shipping": "standard"})


def _shared_trigger_spec() -> SiteSpec:
    """One text field whose three input transitions accept different values under different guards."""
    def typed(tid: str, value: str, target: str, when: list[dict]) -> dict:
        return {"id": tid, "page": "p", "element": "q", "event": "input", "values": [value],
                "when": when, "target": target, "description": f"type {value}"}

    return SiteSpec.model_validate({
        "name": "shared", "title": "Shared", "start_page": "p",
        "variables": [{"name": "cart", "type": "list", "values": ["a", "b"]}, {"name": "n", "type": "int"}],
        "pages": [{"id": "p", "title": "P", "elements": [{"id": "q", "kind": "text_input", "label": "Q"},
                                                       {"id": "home", "kind": "link", "label": "Home"}]},
                  *({"id": x, "title": x.upper(), "elements": [{"id": "home", "kind": "link", "label": "Home"}]}
                    for x in ("r", "s", "t"))],
        "transitions": [typed("foo", "foo", "r", []),
                        typed("bar", "bar", "s", [{"var": "n", "op": "eq", "value": 0}]),
                        typed("baz", "baz", "t", [{"var": "cart", "op": "empty"}]),
                        *({"id": f"back_{x}", "page": x, "element": "home", "target": "p", "description": "home"}
                          for x in ("r", "s", "t"))],
    })


@pytest.mark.parametrize("spec", [load_spec(EXAMPLE), _shared_trigger_spec()], ids=["tiny_shop", "shared_trigger"])
def test_step_agrees_with_enabled_everywhere(spec: SiteSpec) -> None:
    machine = Machine(spec)
    for state in machine.graphs.graph().states:
        for edge, nxt in machine.enabled(state):
            assert machine.step(state, edge.to_event()) == (edge, nxt)


def test_a_later_transition_of_the_same_trigger_takes_its_value() -> None:
    machine = Machine(_shared_trigger_spec())
    pages = {v: machine.step(machine.initial, UIEvent("p", "q", "input", v)) for v in ("foo", "bar", "baz", "nope")}
    assert {v: r and r[1].page for v, r in pages.items()} == {"foo": "r", "bar": "s", "baz": "t", "nope": None}


def test_distances_and_shortest_paths(machine: Machine) -> None:
    dist = machine.graphs.distances("buy_two_express")
    assert dist[machine.initial] == 8
    paths = machine.shortest_paths(machine.initial, "buy_two_express")
    # lamp or mug first, then name/shipping in either order
    assert len(paths) == 4 and all(len(p) == 8 for p in paths)
    goal = machine.goal_predicate("buy_two_express")
    for path in paths:
        state = machine.initial
        for edge in path:
            state = transition(machine, state, edge.to_event())
        assert goal(state)


def test_goal_cache_returns_same_object(machine: Machine) -> None:
    assert machine.goal_predicate("lamp_in_cart") is machine.goal_predicate("lamp_in_cart")
    assert machine.graphs.distances("lamp_in_cart") is machine.graphs.distances("lamp_in_cart")
    with pytest.raises(UnknownGoal, match="lamp_in_cart"):
        machine.goal_predicate("missing")


def test_state_goal_and_distance(machine: Machine) -> None:
    target = machine.initial.with_page("cart")
    assert machine.distance(machine.initial, machine.state_goal(target.key())) == 1
    assert machine.distance(machine.initial, machine.state_goal(State("nowhere"))) is None


def test_graph_bound_raises(machine: Machine) -> None:
    with pytest.raises(StateGraphTooLarge, match="at most 10"):
        machine.graphs.graph(max_states=10)


def test_remove_and_list_length_conditions() -> None:
    spec = SiteSpec.model_validate({
        "name": "t", "title": "T", "start_page": "p",
        "variables": [{"name": "l", "type": "list", "values": ["a", "b"], "default": ["a", "b"]}],
        "pages": [{"id": "p", "title": "P", "elements": [{"id": "x", "kind": "button", "label": "X"}]}],
        "transitions": [Transition(id="rm", page="p", element="x", description="remove a",
                                   when=(Condition(var="l", op="ge", value=1),),
                                   effects=(Effect(op="remove", var="l", value="a"),)).model_dump()],
    })
    m = Machine(spec)
    _, s = m.step(m.initial, UIEvent("p", "x", "click"))
    assert s.get("l") == ("b",)
    _, s2 = m.step(s, UIEvent("p", "x", "click"))
    assert s2 == s  # removing an absent item is a no-op
