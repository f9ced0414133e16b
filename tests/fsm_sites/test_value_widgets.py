"""Sliders, date pickers and drag-to-reorder lists in the engine and the site server: each
interaction is an event with its value, validation names what a widget is bound to wrongly,
and an agent's wrong interaction is a recorded step that fired nothing."""

from __future__ import annotations

import copy

import pytest
import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import UIEvent
from fsm_sites.errors import SpecInvalid
from fsm_sites.render.page_model import describe_page
from fsm_sites.serving.server import SiteServer
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import validate_spec
from tests.fsm_sites.value_widgets_spec import PLANNER_YAML, TEMPLATES_YAML, planner_spec


@pytest.fixture(scope="module")
def machine() -> Machine:
    return Machine(planner_spec())


def _values(machine: Machine, state, transition: str) -> list[str | None]:
    return [e.value for e, _ in machine.enabled(state) if e.transition_id == transition]


def test_a_slider_sends_change_with_each_int_of_its_range_or_its_stops(machine) -> None:
    start = machine.initial
    assert _values(machine, start, "set_budget") == [str(v) for v in range(11)]
    assert _values(machine, start, "set_stars") == ["1", "3", "5"]
    _, after = machine.step(start, UIEvent("plan", "budget", "change", "7"))
    assert after.get("budget") == 7
    for bad in ("11", "-1", "seven", None):
        assert machine.step(start, UIEvent("plan", "budget", "change", bad)) is None
    assert machine.step(start, UIEvent("plan", "stars", "change", "2")) is None  # not a stop


def test_a_date_picker_opens_then_picks_a_day_which_closes_it(machine) -> None:
    start = machine.initial
    assert _values(machine, start, "pick_day") == []  # the grid is closed: no day to pick
    assert not machine.views.is_open(start, "day")
    _, opened = machine.step(start, UIEvent("plan", "day", "open", None))
    assert machine.views.is_open(opened, "day")
    assert _values(machine, opened, "pick_day") == ["2026-06-12", "2026-06-13", "2026-06-20"]
    _, picked = machine.step(opened, UIEvent("plan", "day", "pick", "2026-06-13"))
    assert picked.get("day") == "2026-06-13" and not machine.views.is_open(picked, "day")
    assert machine.step(opened, UIEvent("plan", "day", "pick", "2026-06-14")) is None  # not offered
    _, back = machine.step(start, UIEvent("plan", "back", "open", None))
    assert _values(machine, back, "pick_back") == [str(d) for d in range(1, 31)]  # July's days 1-30 (max 30)
    options = {o["value"]: o["label"] for o in _view(machine, back, "back")["options"]}
    assert options["4"] == "Sat, Jul 4, 2026"


def _view(machine: Machine, state, element: str) -> dict:
    return next(e for e in describe_page(machine, state)["elements"] if e["id"] == element)


def test_a_sortable_moves_one_item_from_one_place_to_another(machine) -> None:
    start = machine.initial
    assert _values(machine, start, "move_stop") == ["0>1", "0>2", "1>0", "1>2", "2>0", "2>1"]
    _, after = machine.step(start, UIEvent("plan", "stop", "move", "2>0"))
    assert after.get("stops") == ("lisbon", "paris", "rome")
    _, after = machine.step(start, UIEvent("plan", "stop", "move", "0>2"))
    assert after.get("stops") == ("rome", "lisbon", "paris")
    for bad in ("0>0", "1>3", "0-1", "", None):
        assert machine.step(start, UIEvent("plan", "stop", "move", bad)) is None
    copies = [e for e in describe_page(machine, start)["elements"] if e["id"] == "stop"]
    assert [(c["value"], c["label"]) for c in copies] == [("0", "Paris"), ("1", "Rome"), ("2", "Lisbon")]


def test_goals_that_need_every_widget_have_short_paths(machine) -> None:
    assert machine.distance(machine.initial, "trip") == 4  # slide, open, pick, drag
    path = machine.shortest_paths(machine.initial, "back_and_stars", limit=1)[0]
    assert [(e.event, e.value) for e in path] == [("change", "3"), ("open", None), ("pick", "4"), ("move", "2>0")]


def _with(edit) -> SiteSpec:
    data = yaml.safe_load(PLANNER_YAML)
    data = copy.deepcopy(data)
    edit(data)
    return SiteSpec.model_validate(data)


def _element(data: dict, eid: str) -> dict:
    return next(e for e in data["pages"][0]["elements"] if e["id"] == eid)


@pytest.mark.parametrize(("edit", "place", "fragment"), [
    (lambda d: _element(d, "budget").update(bind="day"), "elements.budget.bind",
     "expected a slider bound to an int variable, got one of"),
    (lambda d: _element(d, "stars").update(options=[{"value": "9"}]), "elements.stars.bind",
     "expected slider stops that are ints of int 1..5, got '9'"),
    (lambda d: _element(d, "day").pop("open_when"), "elements.day.open_when", "expected `open_when`"),
    (lambda d: _element(d, "back").pop("month"), "elements.back.bind", "expected `month` (YYYY-MM)"),
    (lambda d: _element(d, "back").update(month="July"), "elements.back.bind", "expected a month written YYYY-MM"),
    (lambda d: d["variables"][2]["values"].append("2026-07-01"), "elements.day.bind",
     "expected every date in June 2026 (the month the picker shows), got '2026-07-01'"),
    (lambda d: d["variables"][2]["values"].append("June 1"), "elements.day.bind", "expected a date written YYYY-MM-DD"),
    (lambda d: d["variables"][6].update(type="set"), "elements.stop.repeat",
     "expected a sortable repeated over a list (its order is what it changes), got set"),
    (lambda d: _element(d, "stop").pop("repeat"), "elements.stop.repeat", "got no `repeat`"),
    (lambda d: _element(d, "budget").update(open_when="day_open"), "elements.budget.open_when",
     "expected `open_when` and `month` only on a date_picker"),
    (lambda d: d["transitions"][0].update(effects=[{"move": "stops"}]), "transitions.set_budget.effects[0].move",
     "expected `move` only in the `move` transition of a sortable"),
    (lambda d: d["transitions"][0].update(event="click"), "transitions.set_budget.event",
     "a slider sends ['change'], got 'click'"),
])
def test_a_widget_bound_wrongly_is_refused_with_what_was_expected(edit, place, fragment) -> None:
    problems = validate_spec(_with(edit))
    assert any(p.place.endswith(place) and fragment in p.message for p in problems), problems
    with pytest.raises(SpecInvalid):
        Machine(_with(edit))


@pytest.mark.asyncio(loop_scope="session")
async def test_an_agents_wrong_drag_or_day_is_a_recorded_step_that_fires_nothing() -> None:
    spec = planner_spec()
    async with SiteServer([spec]) as server:
        session = server.create_session("planner", goal="trip", seed=0)
        start = server.state(session.id)
        for event in (UIEvent("plan", "stop", "move", "1>1"), UIEvent("plan", "stop", "move", "1>7"),
                      UIEvent("plan", "day", "pick", "2026-06-13"),  # the grid is closed
                      UIEvent("plan", "budget", "change", "42")):
            record = server.send_event(session.id, event)
            assert not record.verdict.transition_fired and record.verdict.distance_delta == 0
            assert record.verdict.state_before == record.verdict.state_after == start.key()
        record = server.send_event(session.id, UIEvent("plan", "stop", "move", "0>1"))
        assert record.verdict.transition_fired and record.verdict.on_shortest_path
        assert record.verdict.distance_after == record.verdict.distance_before - 1


def test_a_submit_with_a_required_field_empty_shows_its_message_beside_it() -> None:
    from fsm_sites.library import load_machine
    from fsm_sites.render import render_page

    crm = load_machine("crm")
    form = next(n for e, n in crm.enabled(crm.initial) if n.page == "newcontact")
    assert not crm.views.invalid(form, "cname") and 'class="field invalid' not in _html(crm, form, render_page)
    _, form = crm.step(form, UIEvent("newcontact", "cname", "input", "Eva Stone"))
    edge, tried = crm.step(form, UIEvent("newcontact", "submit", "click", None))
    assert edge.transition_id.startswith("newcontact__submit") and tried.page == "newcontact"
    assert tried.get("newcontact_tried") is True
    assert not crm.views.invalid(tried, "cname") and crm.views.invalid(tried, "company")
    html = _html(crm, tried, render_page)
    assert html.count('class="field invalid"') == 1
    assert 'aria-invalid="true" aria-describedby="err-company"' in html
    assert '<span class="field-error" id="err-company" role="alert">Enter the company</span>' in html
    assert _view(crm, tried, "company")["error"] == "Enter the company" and "error" not in _view(crm, tried, "cname")
    _, filled = crm.step(tried, UIEvent("newcontact", "company", "input", "Hooli"))
    assert not crm.views.invalid(filled, "company") and 'class="field invalid' not in _html(crm, filled, render_page)
    assert crm.distance(form, "newcontact") == crm.distance(tried, "newcontact")  # a try never helps


def _html(machine: Machine, state, render_page) -> str:
    return render_page(machine.spec, state, seed=0, machine=machine)


@pytest.mark.parametrize(("edit", "place", "fragment"), [
    (lambda d: _element(d, "budget").update(error="Too much"), "elements.budget.error",
     "expected `invalid_when` with `error`"),
    (lambda d: _element(d, "stop").update(invalid_when="budget > 3"), "elements.stop.invalid_when",
     "expected `invalid_when` on a form field"),
    (lambda d: _element(d, "budget").update(invalid_when="budget > 'x'"), "elements.budget.invalid_when[0]", "expected ints on both sides of '>'"),
])
def test_inline_validation_is_checked(edit, place, fragment) -> None:
    problems = validate_spec(_with(edit))
    assert any(p.place.endswith(place) and fragment in p.message for p in problems), problems


def test_a_tables_sort_event_carries_the_order_and_is_checked() -> None:
    from tests.fsm_sites.value_widgets_spec import templates_spec

    machine = Machine(templates_spec())
    _, page = machine.step(machine.initial, UIEvent("inbox", "go_meetings", "click", None))
    # what the headings ask for: Day's other direction (the rows are by day already) and Time
    assert _values(machine, page, "sort_meetings") == ["-day", "time"]
    _, after = machine.step(page, UIEvent("meetings", "row", "sort", "-day"))
    assert after.get("order") == "-day" and after.get("meetings") == page.get("meetings")  # the order shown only
    assert _values(machine, after, "sort_meetings") == ["day", "time"]
    assert machine.step(page, UIEvent("meetings", "row", "sort", "room")) is None
    assert machine.step(page, UIEvent("meetings", "row", "sort", "day")) is None  # no heading asks for it
    sort = next(e for e in describe_page(machine, page)["elements"] if e["kind"] == "sort")
    assert [o["label"] for o in sort["options"]] == ["Day (descending)", "Time"] and sort["text"] == "day"

    def bad(edit):
        data = yaml.safe_load(TEMPLATES_YAML)
        edit(data)
        return validate_spec(SiteSpec.model_validate(data))

    def meetings_row(d):
        return next(e for p in d["pages"] if p["id"] == "meetings" for e in p["elements"] if e["id"] == "row")

    problems = bad(lambda d: next(v for v in d["variables"] if v["name"] == "order").update(values=["day", "room"]))
    assert any(p.place.endswith("row.sort") and "['room']" in p.message for p in problems), problems
    problems = bad(lambda d: meetings_row(d).update(repeat=None, label="Meetings"))
    assert any(p.place.endswith("row.sort") and "expected `sort` on an element repeated" in p.message
               for p in problems), problems
