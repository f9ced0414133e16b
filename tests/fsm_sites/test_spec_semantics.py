"""Specs mean what they say (issue 23): a disabled control fires nothing, page parameters
work in any declared order, copied free text keeps what was typed."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import UIEvent
from fsm_sites.library import EXAMPLES_DIR as EXAMPLES
from fsm_sites.render.page import render_page
from fsm_sites.render.page_model import describe_page
from fsm_sites.serving.sessions import SessionStore
from fsm_sites.serving.verdict import judge_step
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import check_spec

BOOKING = """
name: booking
title: Booking
start_page: pick
types:
  - {name: day, type: enum, values: ["", mon, tue]}
variables:
  - {name: day, type: day}
  - {name: booked, type: bool}
pages:
  - id: pick
    title: Pick a day
    elements:
      - {id: day, kind: select, label: Day, bind: day}
      - {id: next, kind: button, label: Next, disabled_when: "day == ''"}
  - id: done
    title: Booked
    elements:
      - {id: back, kind: link, label: Back}
transitions:
  - {id: pick_day, page: pick, element: day, event: select, effects: [{set: day, to: value}], description: "pick $value"}
  - {id: next, page: pick, element: next, target: done, effects: [{set: booked, to: true}], description: go on}
  - {id: back, page: done, element: back, target: pick, description: go back}
goals:
  - {id: booked, description: book a day, page: done, conditions: booked}
"""


def _data() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(BOOKING))


def test_a_disabled_control_fires_nothing_and_its_verdict_says_so() -> None:
    m = Machine(SiteSpec.model_validate(_data()))
    next_el = m.elements[("pick", "next")]
    assert m.views.disabled(m.initial, next_el)
    assert m.step(m.initial, UIEvent("pick", "next", "click")) is None
    assert all(e.element != "next" for e, _ in m.enabled(m.initial))
    paths = m.shortest_paths(m.initial, "booked")
    assert m.distance(m.initial, "booked") == 2 and paths
    assert all([e.transition_id for e in p] == ["pick_day", "next"] for p in paths)
    shown = next(e for e in describe_page(m, m.initial)["elements"] if e["id"] == "next")
    assert shown["disabled"] is True  # the Tk app's page model
    html = render_page(m.spec, m.initial, seed=0, machine=m)  # what the element list reads
    assert re.search(r'data-el="next"[^>]*aria-disabled="true"', html)
    store = SessionStore()
    store.add_site(m.spec)
    session = store.create("booking", goal="booked")
    record = store.apply(session.id, UIEvent("pick", "next", "click"))
    assert not record.verdict.transition_fired and record.verdict.control_disabled
    assert record.verdict.state_after == record.verdict.state_before
    record = store.apply(session.id, UIEvent("pick", "day", "select", "mon"))
    assert record.verdict.transition_fired and not record.verdict.control_disabled
    assert store.apply(session.id, UIEvent("pick", "next", "click")).verdict.goal_reached


def test_judge_step_computes_each_verdict_the_session_logs() -> None:
    m = Machine(SiteSpec.model_validate(_data()))
    goal = m.goal_predicate("booked")
    after, verdict = judge_step(m, m.initial, UIEvent("pick", "next", "click"), goal)
    assert after == m.initial and verdict.control_disabled and not verdict.transition_fired
    after, verdict = judge_step(m, m.initial, UIEvent("pick", "day", "select", "mon"), goal)
    assert after.get("day") == "mon" and verdict.transition_id == "pick_day" and verdict.on_shortest_path
    assert (verdict.distance_before, verdict.distance_after, verdict.goal_reached) == (2, 1, False)
    store = SessionStore()
    store.add_site(m.spec)
    session = store.create("booking", goal="booked")
    assert store.apply(session.id, UIEvent("pick", "day", "select", "mon")).verdict == verdict


def test_validation_warns_where_disabled_when_and_when_disagree(tmp_path) -> None:
    data = _data()
    assert check_spec(data)[1].warnings == []  # `disabled_when` alone says when it is off
    data["transitions"][1]["when"] = "day != 'mon'"  # fires on "" (shown disabled), not on mon (shown enabled)
    _, report = check_spec(data)
    assert report.valid, report.problems
    text = "\n".join(report.warnings)
    assert "transitions.next" in text and "`disabled_when` holds" in text and "pick{" in text, text
    assert "pages.pick.elements.next" in text and "fires nothing" in text, text
    import typer
    from typer.testing import CliRunner

    from fsm_sites.cli import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    path = tmp_path / "booking.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["sites", "validate", str(path)])
    assert result.exit_code == 0 and "warning: transitions.next:" in result.output, result.output


PARAMS = """
name: trips
title: Trips
start_page: home
types:
  - {name: city, type: enum, values: [paris, rome, oslo]}
  - {name: day, type: enum, values: [mon, tue]}
pages:
  - id: home
    title: Trips
    elements:
      - {id: go, kind: button, label: Paris to Rome on Tuesday}
  - id: trip
    title: "{src} to {dst}, {day}"
    params: [{name: src, type: city}, {name: dst, type: city}, {name: day, type: day}]
    elements:
      - {id: swap, kind: button, label: Swap}
transitions:
  - {id: go, page: home, element: go, target: trip, args: {src: "'paris'", dst: "'rome'", day: "'tue'"}, description: go}
  - {id: swap, page: trip, element: swap, target: trip, args: {day: day, src: dst, dst: src}, description: swap}
goals:
  - {id: back_trip, description: "Rome to Paris", page: "trip(rome,paris,tue)"}
"""


def test_page_parameters_work_in_any_declared_order() -> None:
    data = yaml.safe_load(PARAMS)
    _, report = check_spec(data)
    assert report.valid, report.problems
    m = Machine(SiteSpec.model_validate(data))
    fired = m.step(m.initial, UIEvent("home", "go", "click"))
    assert fired is not None and fired[1].page == "trip(paris,rome,tue)"
    assert m.views.text(fired[1], m.pages["trip"].title) == "paris to rome, tue"
    swapped = m.step(fired[1], UIEvent(fired[1].page, "swap", "click"))
    assert swapped is not None and swapped[1].page == "trip(rome,paris,tue)"
    assert m.distance(m.initial, "back_trip") == 2


ROW_MODAL = """
name: appts
title: Appointments
start_page: list
types:
  - {name: pet, type: enum, values: ["", rex, milo]}
variables:
  - {name: appts, type: set, item: pet, max_len: 2, default: [rex, milo]}
  - {name: target, type: pet}
pages:
  - id: list
    title: "Appointments ({count(appts)})"
    elements:
      - {id: row, kind: text, label: "{it}", repeat: appts}
      - {id: cancel, kind: button, label: "Cancel {it}", repeat: appts}
  - id: confirm
    kind: modal
    parent: list
    title: "Cancel {target}'s appointment?"
    elements:
      - {id: drop, kind: button, label: Cancel it}
      - {id: keep, kind: button, label: Keep it}
transitions:
  - {id: ask, page: list, element: cancel, target: confirm, effects: [{set: target, to: it}], description: "cancel {it}"}
  - {id: drop, page: confirm, element: drop, target: list, effects: [{remove: appts, item: target}, {clear: target}],
     toast: Appointment cancelled, description: confirm}
  - {id: keep, page: confirm, element: keep, target: list, effects: [{clear: target}], description: keep it}
goals:
  - {id: no_milo, description: cancel Milo's appointment, conditions: "not ('milo' in appts)"}
"""


def test_a_modal_opened_from_a_repeated_row_is_drawn_over_its_rows() -> None:
    m = Machine(SiteSpec.model_validate(yaml.safe_load(ROW_MODAL)))
    opened = m.step(m.initial, UIEvent("list", "cancel", "click", "1"))
    assert opened is not None and opened[1].page == "confirm"
    html = render_page(m.spec, opened[1], seed=3, machine=m)
    assert "Cancel milo&#x27;s appointment?" in html or "Cancel milo's appointment?" in html
    beneath = html.split('<div class="backdrop">')[0]
    assert "Cancel rex" in beneath and "data-el=" not in beneath  # the rows, drawn inert
    assert m.distance(m.initial, "no_milo") == 2


def test_a_curated_site_confirms_a_row_s_removal_in_a_dialog() -> None:
    from fsm_sites.library import load_machine

    m = load_machine("forum")
    path = m.shortest_paths(m.initial, "swap_t5", limit=1)[0]
    ids = [e.transition_id for e in path]
    assert "following__rm" in ids and ids[ids.index("following__rm") + 1] == "following_remove__ok"
    state = m.initial
    for edge in path[:ids.index("following__rm") + 1]:
        fired = m.step(state, edge.to_event())
        assert fired is not None
        state = fired[1]
    html = render_page(m.spec, state, seed=5, machine=m)
    assert "Stop following Rules - read first" in html and 'role="dialog"' in html


def test_task_synthesis_reports_every_named_goal_it_leaves_out(tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from fsm_sites.synthesis.tasks import synthesize_tasks
    from harness.fsm_tasks_cli import register

    spec = SiteSpec.model_validate(yaml.safe_load((EXAMPLES / "tiny_shop.yaml").read_text()))
    skipped: list = []
    tasks = synthesize_tasks(spec, n=4, seed=0, max_depth=5, skipped=skipped)
    assert "buy_two_express" not in {t.goal for t in tasks}
    reasons = {s.goal: s.reason for s in skipped}
    assert "8 steps from the start, deeper than --max-depth 5" in reasons["buy_two_express"], reasons
    deep = synthesize_tasks(spec, n=4, seed=0, max_depth=8)
    assert any(t.goal == "buy_two_express" and t.difficulty == 8 for t in deep)

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    out = tmp_path / "t.jsonl"
    result = CliRunner().invoke(app, ["tasks", "synth", "--site", str(EXAMPLES / "tiny_shop.yaml"), "--n", "3",
                                      "--no-verify", "--max-depth", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "left out goal 'buy_two_express': 8 steps from the start, deeper than --max-depth 5" in result.output


PHONE = """
name: account
title: Account
start_page: home
variables:
  - {name: phone, type: text, values: ["5550100"], other: "5550199"}
  - {name: saved_phone, type: text, values: ["5550100"], other: "5550199"}
pages:
  - id: home
    title: "Your phone: {saved_phone}"
    elements:
      - {id: edit, kind: button, label: Settings}
  - id: settings
    title: Settings
    elements:
      - {id: phone, kind: text_input, label: Phone, bind: phone}
      - {id: save, kind: button, label: Save}
transitions:
  - {id: edit, page: home, element: edit, target: settings, effects: [{set: phone, to: saved_phone}],
     description: open the settings}
  - {id: type_phone, page: settings, element: phone, event: input, effects: [{set: phone, to: value}],
     description: "type '$value' as your phone"}
  - {id: save, page: settings, element: save, target: home, effects: [{set: saved_phone, to: phone}, {clear: phone}],
     description: save}
goals:
  - {id: saved, description: save a phone number, page: home, conditions: "saved_phone != ''"}
"""


def test_copied_free_text_keeps_what_was_typed() -> None:
    m = Machine(SiteSpec.model_validate(yaml.safe_load(PHONE)))
    state = m.initial
    for element, event, value in [("edit", "click", None), ("phone", "input", "(555) 867-5309"), ("save", "click", None)]:
        fired = m.step(state, UIEvent(state.page, element, event, value))
        assert fired is not None, (state.key(), element)
        state = fired[1]
    assert state.get("saved_phone") == "(555) 867-5309" and state.get("phone") == ""
    assert m.views.text(state, m.pages["home"].title) == "Your phone: (555) 867-5309"
    assert m.canonical(state).get("saved_phone") == "5550199"  # the class the machine tells apart
    reopened = m.step(state, UIEvent("home", "edit", "click"))
    assert reopened is not None and reopened[1].get("phone") == "(555) 867-5309"
    shown = next(e for e in describe_page(m, reopened[1])["elements"] if e["id"] == "phone")
    assert shown["text"] == "(555) 867-5309"


def test_a_yaml_word_read_as_a_boolean_gets_a_message_to_quote_it() -> None:
    data = yaml.safe_load(ROW_MODAL.replace("id: drop,", "id: yes,").replace("element: drop", "element: yes"))
    messages = [str(p) for p in check_spec(data)[1].problems]
    assert messages and all("quote it" in m for m in messages), messages
    assert any(m.startswith("pages.confirm.elements[0].id: expected text, got true") for m in messages), messages


@pytest.mark.parametrize("change", [{"type": "integer"}, {"min": 5}])
def test_a_variable_with_a_bad_type_is_reported_once_not_at_every_use(change: dict) -> None:
    data = yaml.safe_load((EXAMPLES / "tiny_shop.yaml").read_text())
    qty = next(v for v in data["variables"] if v["name"] == "qty")
    qty.update(change)
    problems = check_spec(data)[1].problems
    assert [p.place for p in problems] == [f"variables.qty.{next(iter(change))}"], problems
