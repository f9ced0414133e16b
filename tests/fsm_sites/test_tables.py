"""Paged, sortable data tables in the engine: the pager's `page` event offers the pages the
table has but the one shown, a row's buttons fire only while its row is on the page shown,
`rank()` tells where a row is shown, sorting goes back to page 1 (the generator's tables and
the bank's Activity), the session refuses what the machine does not offer, and validation
names what is wrong with a pagination spec and what it expected."""

from __future__ import annotations

import pytest
import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.library import load_machine, load_site
from fsm_sites.render.page_model import describe_page
from fsm_sites.serving.sessions import SessionStore
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import validate_spec

LEDGER_YAML = """
name: ledger
title: Ledger
domain: bank
start_page: list
types:
  - {name: payee, type: enum, values: [acme, blue, city, dell, echo]}
  - {name: tx, type: record, fields: [{name: payee, type: payee}, {name: amount, type: int, min: 0, max: 99}]}
variables:
  - name: txs
    type: list
    item: tx
    max_len: 5
    default: [{payee: acme, amount: 30}, {payee: blue, amount: 10}, {payee: city, amount: 50},
              {payee: dell, amount: 20}, {payee: echo, amount: 40}]
  - {name: order, type: enum, values: [payee, amount, -amount]}
  - {name: tpage, type: int, min: 1, max: 3}
  - {name: opened, type: enum, values: ["", acme, blue, city, dell, echo]}
pages:
  - id: list
    title: Payments
    elements:
      - {id: row, kind: text, label: "{it.payee} {it.amount}", repeat: txs, sort: order, per_page: 2, pager: tpage}
      - {id: open, kind: button, label: Open, repeat: txs}
  - id: detail
    title: "Payment to {opened}"
    elements:
      - {id: back, kind: link, label: Back}
transitions:
  - {id: sort, page: list, element: row, event: sort, effects: [{set: order, to: value}, {set: tpage, to: 1}],
     description: "sort by $value"}
  - {id: go, page: list, element: row, event: page, effects: [{set: tpage, to: value}], description: "go to page $value"}
  - {id: open, page: list, element: open, effects: [{set: opened, to: it.payee}], target: detail, description: "open {it.payee}"}
  - {id: back, page: detail, element: back, effects: [{clear: opened}], target: list, description: go back}
goals:
  - {id: open_dell, description: open the payment to dell, page: detail, conditions: ["opened == 'dell'"]}
  - id: city_shown
    description: show the payment to city, sorted by amount
    conditions: ["order == 'amount'", "(tpage - 1) * 2 <= rank(txs, {payee: 'city', amount: 50}, order)",
                 "rank(txs, {payee: 'city', amount: 50}, order) < tpage * 2"]
"""


def ledger() -> Machine:
    return Machine(SiteSpec.model_validate(yaml.safe_load(LEDGER_YAML)))


def _offered(machine: Machine, state: State, event: str) -> list[str | None]:
    return [e.value for e, _ in machine.enabled(state) if e.event == event]


def test_the_pager_offers_every_page_the_table_has_but_the_one_shown() -> None:
    m = ledger()
    assert _offered(m, m.initial, "page") == ["2", "3"]
    _, second = m.step(m.initial, UIEvent("list", "row", "page", "2"))
    assert second.get("tpage") == 2 and _offered(m, second, "page") == ["1", "3"]
    for refused in ("2", "0", "4", "x", None):  # the page shown, pages the table lacks: nothing fires
        assert m.step(second, UIEvent("list", "row", "page", refused)) is None


def test_a_rows_button_fires_only_while_its_row_is_on_the_page_shown() -> None:
    m = ledger()
    assert [v for v, _ in m.views.instances(m.initial, "open")] == ["0", "1"]  # payee order: acme, blue | city, dell | echo
    assert m.step(m.initial, UIEvent("list", "open", "click", "3")) is None  # dell: page 2
    _, second = m.step(m.initial, UIEvent("list", "row", "page", "2"))
    assert [v for v, _ in m.views.instances(second, "open")] == ["2", "3"]
    _, detail = m.step(second, UIEvent("list", "open", "click", "3"))
    assert detail.page == "detail" and detail.get("opened") == "dell"


def test_sorting_orders_the_rows_before_they_are_paged_and_goes_back_to_page_one() -> None:
    m = ledger()
    _, third = m.step(m.initial, UIEvent("list", "row", "page", "3"))
    _, by_amount = m.step(third, UIEvent("list", "row", "sort", "amount"))
    assert by_amount.get("tpage") == 1 and by_amount.get("order") == "amount"
    shown = [item.get("payee") for _, item in m.views.instances(by_amount, "open")]
    assert shown == ["blue", "dell"]  # 10, 20 | 30, 40 | 50
    assert _offered(m, by_amount, "sort") == ["payee", "-amount"]  # what the headings ask for now


def test_goals_can_ask_where_a_row_is_shown_with_rank() -> None:
    m = ledger()
    paths = m.shortest_paths(m.initial, "city_shown")
    assert [[(e.event, e.value) for e in p] for p in paths] == [[("sort", "amount"), ("page", "3")]]
    assert m.distance(m.initial, "open_dell") == 2  # sort by amount (dell 2nd) or go to page 2, then open


def test_the_page_model_gives_the_pager_as_one_choice() -> None:
    m = ledger()
    _, second = m.step(m.initial, UIEvent("list", "row", "page", "2"))
    pager = next(e for e in describe_page(m, second)["elements"] if e["kind"] == "pager")
    assert [(o["label"], o["value"]) for o in pager["options"]] == [
        ("Previous", "1"), ("1", "1"), ("2", "2"), ("3", "3"), ("Next", "3")]
    assert pager["text"] == "2" and pager["label"] == "Page (5 rows)"


def test_a_session_records_a_click_on_the_page_shown_as_a_step_that_fired_nothing() -> None:
    store = SessionStore()
    store.add_site(SiteSpec.model_validate(yaml.safe_load(LEDGER_YAML)))
    session = store.create("ledger", goal="open_dell")
    moved = store.apply(session.id, UIEvent("list", "row", "page", "2"))
    assert moved.verdict.transition_fired and moved.verdict.on_shortest_path
    again = store.apply(session.id, UIEvent("list", "row", "page", "2"))
    assert not again.verdict.transition_fired and again.verdict.state_after == again.verdict.state_before


def test_the_bank_activity_sorts_pages_and_opens_rows() -> None:
    m = load_machine("bank")
    _, page = m.step(m.initial, UIEvent("home", "go_activity", "click", None))
    refs = [item.get("ref") for _, item in m.views.instances(page, "open")]
    assert refs == ["t9", "t8", "t7"] and _offered(m, page, "page") == ["2", "3"]  # newest first, 3 a page
    goals = {g.id: g for g in load_site("bank").goals}
    assert {"activity_top", "activity_city", "activity_payee"} <= set(goals)
    path = m.shortest_paths(m.initial, "activity_payee")[0]
    assert [(e.event, e.value) for e in path][1:] == [("sort", "payee"), ("page", "3"), ("click", "5")]  # SkyTrip
    _, detail = m.step(page, UIEvent("activity", "open", "click", "8"))  # Pixel Mobile, t9
    assert detail.page == "activity_row(t9)" and detail.get("activity_page") == 1
    _, home = m.step(detail, UIEvent(detail.page, "nav_home", "click", None))
    assert home.get("activity_sort") == "-date"  # local to the table and its rows: reset on leaving


def test_a_bank_goal_asks_for_a_rows_place_in_the_order_shown() -> None:
    m = load_machine("bank")
    goal = next(g for g in load_site("bank").goals if g.id == "activity_smallest_first")
    assert "rank(activity, it, activity_sort) == 0" in str(goal.conditions)
    paths = m.shortest_paths(m.initial, goal.id)
    assert {tuple((e.element, e.event, e.value) for e in p[1:]) for p in paths} == {(("row", "sort", "amount"),)}
    _, page = m.step(m.initial, UIEvent("home", "go_activity", "click", None))
    assert not m.goal_predicate(goal.id)(page)  # newest first: Metro Transit (Jun 14) is second
    _, by_amount = m.step(page, UIEvent("activity", "row", "sort", "amount"))
    assert [item.get("ref") for _, item in m.views.instances(by_amount, "open")][0] == "t8"
    assert m.goal_predicate(goal.id)(by_amount)


def _with(edit) -> list:
    data = yaml.safe_load(LEDGER_YAML)
    edit(next(e for p in data["pages"] for e in p["elements"] if e["id"] == "row"), data)
    return validate_spec(SiteSpec.model_validate(data))


@pytest.mark.parametrize("edit, place, fragment", [
    (lambda el, d: el.pop("pager"), "row.pager", "expected `per_page` (rows a page) and `pager`"),
    (lambda el, d: el.pop("per_page"), "row.per_page", "got `pager` alone"),
    (lambda el, d: el.update(per_page=0), "row.per_page", "expected at least 1 row a page, got 0"),
    (lambda el, d: el.update(pager="order"), "row.pager",
     "expected an int variable from 1 to 3 (the pages of up to 5 rows at 2 a page), got 'order', one of"),
    (lambda el, d: next(v for v in d["variables"] if v["name"] == "tpage").update(max=5), "row.pager",
     "expected an int variable from 1 to 3"),
    (lambda el, d: el.update(per_page=3), "row.pager", "expected an int variable from 1 to 2"),
    (lambda el, d: el.update(repeat=None, sort=None, label="Payments"), "row.per_page",
     "expected `per_page` on an element repeated over a list or set (a table's rows), got no `repeat`"),
    (lambda el, d: d["pages"][0]["elements"][1].update(per_page=2, pager="tpage"), "open.per_page",
     "expected one `per_page` per table; 'row' already pages 'txs'"),
    (lambda el, d: d["transitions"][1].update(element="open"), "transitions.go.event",
     "a button sends ['click'], got 'page'"),
])
def test_a_bad_pagination_spec_says_what_is_wrong_and_what_was_expected(edit, place, fragment) -> None:
    problems = _with(edit)
    assert any(p.place.endswith(place) and fragment in p.message for p in problems), problems


def test_rank_is_type_checked() -> None:
    def goal(text: str):
        return lambda el, d: d["goals"].append({"id": "g", "description": "g", "conditions": [text]})

    problems = _with(goal("rank(order, 'x') == 0"))
    assert any("expected a list or set as the first argument of rank()" in p.message for p in problems), problems
    problems = _with(goal("rank(txs, {payee: 'acme', amount: 30}, 'date') == 0"))
    assert any("expected an order of the records' fields ['amount', 'payee']" in p.message for p in problems), problems


def test_an_instruction_names_an_order_by_its_label() -> None:
    from fsm_sites.synthesis.tasks import describe_edge

    m = load_machine("bank")
    _, page = m.step(m.initial, UIEvent("home", "go_activity", "click", None))
    edge = next(e for e, _ in m.enabled(page) if e.event == "sort" and e.value == "amount")
    assert describe_edge(m, edge, page) == "sort activity by amount (ascending)"
    edge = next(e for e, _ in m.enabled(page) if e.event == "page" and e.value == "3")
    assert describe_edge(m, edge, page) == "go to page 3 of activity"
