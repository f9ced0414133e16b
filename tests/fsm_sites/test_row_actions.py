"""Per-row actions in data tables: a repeated element's transition names its own row as
`row` (the copy its event came from), which keeps that meaning inside `where` and
predicates, where `it` is the item scanned; a row's action changes that row only, fires
only while its row is on the page shown, and a removal while the last page is shown brings
the pager back onto the last page there is (never an empty page)."""

from __future__ import annotations

import pytest
import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.library import load_machine, load_site
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import validate_spec

TASKS_YAML = """
name: tasks
title: Tasks
domain: crm
start_page: list
types:
  - {name: who, type: enum, values: [ann, bob, cy, dee, eve]}
  - {name: task, type: record, fields: [{name: who, type: who}, {name: done, type: bool}]}
variables:
  - name: tasks
    type: list
    item: task
    max_len: 5
    default: [{who: ann, done: false}, {who: bob, done: false}, {who: cy, done: false},
              {who: dee, done: false}, {who: eve, done: false}]
  - {name: tpage, type: int, min: 1, max: 3}
pages:
  - id: list
    title: Tasks
    elements:
      - {id: row, kind: text, label: "{it.who}", repeat: tasks, per_page: 2, pager: tpage}
      - {id: done, kind: button, label: Done, repeat: tasks, visible_when: ["not it.done"]}
      - {id: drop, kind: button, label: Delete, repeat: tasks}
      - {id: purge, kind: button, label: Delete the done ones}
transitions:
  - {id: go, page: list, element: row, event: page, effects: [{set: tpage, to: value}], description: "go to page $value"}
  - {id: done, page: list, element: done, description: "finish {row.who}",
     effects: [{update: tasks, where: "it.who == row.who", fields: {done: true}}]}
  - {id: drop, page: list, element: drop, description: "delete {row.who}", effects: [{remove: tasks, where: "it == row"}]}
  - {id: purge, page: list, element: purge, description: delete the done ones, effects: [{remove: tasks, where: it.done}]}
goals:
  - {id: dee_done, description: finish dee's task, conditions: ["any(tasks, it.who == 'dee' and it.done)"]}
  - {id: on_page_three, description: show the third page, conditions: ["tpage == 3"]}
"""


def tasks(edit=None) -> SiteSpec:
    data = yaml.safe_load(TASKS_YAML)
    if edit is not None:
        edit(data)
    return SiteSpec.model_validate(data)


def _page(m: Machine, state: State, number: int) -> State:
    return m.step(state, UIEvent("list", "row", "page", str(number)))[1]


def _done(state: State) -> list[str]:
    return [item.get("who") for item in state.get("tasks") if item.get("done")]


def test_a_rows_action_updates_its_own_row_only() -> None:
    m = Machine(tasks())
    _, after = m.step(m.initial, UIEvent("list", "done", "click", "1"))
    assert _done(after) == ["bob"]  # `row` is bob's row; `it` in `where` scanned every row
    assert [v for v, _ in m.views.instances(after, "done")] == ["0"]  # bob's Done is gone, ann's is there
    _, both = m.step(after, UIEvent("list", "done", "click", "0"))
    assert _done(both) == ["ann", "bob"]


def test_on_another_page_a_rows_button_is_not_shown_and_its_event_is_refused() -> None:
    m = Machine(tasks())
    assert [v for v, _ in m.views.instances(m.initial, "done")] == ["0", "1"]
    assert m.step(m.initial, UIEvent("list", "done", "click", "3")) is None  # dee: page 2
    second = _page(m, m.initial, 2)
    assert [v for v, _ in m.views.instances(second, "done")] == ["2", "3"]
    assert m.step(second, UIEvent("list", "done", "click", "0")) is None  # ann: page 1
    _, after = m.step(second, UIEvent("list", "done", "click", "3"))
    assert _done(after) == ["dee"]
    path = m.shortest_paths(m.initial, "dee_done")[0]
    assert [(e.element, e.event, e.value) for e in path] == [("row", "page", "2"), ("done", "click", "3")]


def test_removing_the_last_pages_rows_brings_the_pager_back_onto_the_last_page() -> None:
    m = Machine(tasks())
    third = _page(m, m.initial, 3)
    assert [item.get("who") for _, item in m.views.instances(third, "drop")] == ["eve"]
    _, after = m.step(third, UIEvent("list", "drop", "click", "4"))
    assert after.get("tpage") == 2  # four rows: two pages; not an empty third page
    assert [item.get("who") for _, item in m.views.instances(after, "drop")] == ["cy", "dee"]
    assert [e.value for e, _ in m.enabled(after) if e.event == "page"] == ["1"]


def test_a_removal_elsewhere_than_the_table_clamps_its_pager_too() -> None:
    m = Machine(tasks())
    state = m.initial
    for value in ("0", "1"):  # ann and bob done on page 1, then page 3
        state = m.step(state, UIEvent("list", "done", "click", value))[1]
    third = _page(m, state, 3)
    _, purged = m.step(third, UIEvent("list", "purge", "click", None))
    assert [item.get("who") for item in purged.get("tasks")] == ["cy", "dee", "eve"]
    assert purged.get("tpage") == 2 and len(m.views.instances(purged, "drop")) == 1


def test_the_clamp_is_part_of_the_model_so_goal_searches_agree_with_the_full_graph() -> None:
    m = Machine(tasks())
    graph = m.graphs.graph()
    assert all(s.get("tpage") <= max(1, -(-len(s.get("tasks")) // 2)) for s in graph.states)
    dist = m.graphs.distances(m.goal_predicate("on_page_three"))
    for state in graph.states[:40]:
        assert m.distance(state, "on_page_three") == dist.get(state)


@pytest.mark.parametrize("edit, place, fragment", [
    (lambda d: d["goals"].append({"id": "g", "description": "g", "conditions": ["any(tasks, it == row)"]}),
     "goals.g", "'row' is only defined in a repeated element's expressions"),
    (lambda d: d["transitions"].append({"id": "p2", "page": "list", "element": "purge", "description": "x",
                                        "when": ["false"], "effects": [{"remove": "tasks", "where": "it == row"}]}),
     "transitions.p2.effects[0]", "'row' is only defined in a repeated element's expressions"),
    (lambda d: d["variables"].append({"name": "row", "type": "bool"}), "variables.row",
     "expected a name other than ['value', 'it', 'row']"),
    (lambda d: d["transitions"][1]["effects"][0].update(where="it.who == row.day"), "transitions.done.effects[0]",
     "expected a field of ['done', 'who'], got 'day' in 'row.day'"),
])
def test_row_is_checked_and_a_misuse_says_what_was_expected(edit, place, fragment) -> None:
    problems = validate_spec(tasks(edit))
    assert any(p.place.startswith(place) and fragment in p.message for p in problems), problems


def test_the_bank_flags_the_largest_payment_after_paging_or_sorting() -> None:
    m = load_machine("bank")
    goal = next(g for g in load_site("bank").goals if g.id == "activity_flag")
    assert "largest payment" in goal.description
    paths = m.shortest_paths(m.initial, "activity_flag")
    assert paths and all(len(p) == 3 and p[1].event in ("page", "sort") and p[2].element == "flag" for p in paths)
    _, page = m.step(m.initial, UIEvent("home", "go_activity", "click", None))
    assert m.views.instances(page, "flag") == []  # newest first: neither payment over $500 is on page 1
    second = m.step(page, UIEvent("activity", "row", "page", "2"))[1]
    assert [item.get("ref") for _, item in m.views.instances(second, "flag")] == ["t6", "t4"]
    _, flagged = m.step(second, UIEvent("activity", "flag", "click", "3"))  # t4, stored 4th
    assert [i.get("ref") for i in flagged.get("activity") if i.get("flagged")] == ["t4"]
    assert m.goal_predicate("activity_flag")(flagged)
    assert [item.get("ref") for _, item in m.views.instances(flagged, "unflag")] == ["t4"]
    _, unflagged = m.step(flagged, UIEvent("activity", "unflag", "click", "3"))
    assert unflagged.get("activity") == m.initial.get("activity")
    counted = m.graphs.count_states(50_000)
    assert counted.exact and counted.count < 30_000  # two flaggable rows: four flag states
