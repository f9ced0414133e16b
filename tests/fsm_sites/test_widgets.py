"""The widget kinds in the engine and in validation: what is inside a menu or an accordion
is visible only while it is open, every widget interaction is an event of the machine,
and misuse is reported with the field and what was expected."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from fsm_sites.engine.machine import compile_site
from fsm_sites.engine.state import UIEvent
from fsm_sites.library import load_site, site_path
from fsm_sites.validation.validate import validate_spec


def _data() -> dict[str, Any]:
    return yaml.safe_load(site_path("account_center").read_text())


def _messages(data: dict[str, Any]) -> list[str]:
    return [f"{p.place}: {p.message}" for p in validate_spec(data)]


def _element(data: dict[str, Any], page: str, eid: str) -> dict[str, Any]:
    return next(e for p in data["pages"] if p["id"] == page for e in p["elements"] if e["id"] == eid)


def test_widget_events_are_transitions_and_inside_follows_the_container() -> None:
    m = compile_site(load_site("account_center"))
    shown = [e.id for e in m.views.visible_elements(m.initial)]
    assert "sign_out" not in shown and "upgrade" not in shown and "account" in shown
    edge, opened = m.step(m.initial, UIEvent("home", "account", "click"))
    assert edge.transition_id == "account_toggle" and "sign_out" in [e.id for e in m.views.visible_elements(opened)]
    assert m.step(opened, UIEvent("home", "account", "close"))[1] == m.initial
    assert m.step(m.initial, UIEvent("home", "account", "close")) is None  # Escape with nothing open
    edge, tip = m.step(m.initial, UIEvent("home", "fee", "hover"))
    assert edge.transition_id == "show_fee" and tip.get("fee_tip") is True
    assert m.step(tip, UIEvent("home", "fee", "hover")) is None  # a second hover changes nothing
    edge, typed = m.step(m.initial, UIEvent("home", "city", "input", "  oslo "))
    assert edge.value == "Oslo" and m.canonical(typed).get("city") == "Oslo"
    assert m.step(m.initial, UIEvent("home", "city", "input", "Zurich"))[0].value == "something else"
    assert m.step(m.initial, UIEvent("home", "city", "select", "Lisbon"))[1].get("city") == "Lisbon"
    goals = {g.id: m.distance(m.initial, m.goal_predicate(g.id)) for g in m.spec.goals}
    assert goals == {"sign_out": 2, "oslo": 1, "fee_shown": 1, "pro_plan": 5}


def test_widget_misuse_is_reported_by_field() -> None:
    data = _data()
    assert validate_spec(copy.deepcopy(data)) == []
    _element(data, "home", "account")["bind"] = "city"
    _element(data, "home", "upgrade")["inside"] = "fee"
    _element(data, "home", "city")["bind"] = "plan"
    _element(data, "plan_1", "steps")["current"] = "pay"
    _element(data, "plan_1", "next")["current"] = "choose"
    next(t for t in data["transitions"] if t["id"] == "plan_next")["event"] = "hover"
    msgs = _messages(data)
    expected = [
        "pages.home.elements.account.bind: a menu is open while its bound variable holds; expected the name of a bool variable, got 'city'",
        "pages.home.elements.upgrade.inside: expected the id of a menu or accordion of page 'home' (['account', 'faq']), got 'fee' (a tooltip)",
        "pages.home.elements.city.bind: a combobox shows what was typed; expected the name of a text variable, got 'plan'",
        "pages.plan_1.elements.steps.current: expected the step this page is on, one of ['choose', 'review'], got 'pay'",
        "pages.plan_1.elements.next.current: only a stepper has a current step, not a button",
        "transitions.plan_next.event: a button sends ['click'], got 'hover'",
    ]
    for line in expected:
        assert line in msgs, (line, msgs)


def test_the_docs_excerpt_is_the_example_files() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "fsm_spec.md").read_text()
    block = doc.split("## Widgets", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    excerpt = yaml.safe_load(block)
    data = _data()
    variables = {v["name"]: v for v in data["variables"]}
    assert all(variables[v["name"]] | v == variables[v["name"]] for v in excerpt["variables"])
    for page in excerpt["pages"]:
        full = next(p for p in data["pages"] if p["id"] == page["id"])
        assert all(e in full["elements"] for e in page["elements"]), page["id"]
    assert all(t in data["transitions"] for t in excerpt["transitions"])
