"""The generator gives distinct valid sites; engine properties hold on generated specs."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm_sites.engine.machine import Machine
from fsm_sites.generator import synthesize_site
from fsm_sites.spec.site import SiteSpec, dump_spec, load_spec


@cache
def _site(seed: int, difficulty: str) -> SiteSpec:
    return synthesize_site(seed, difficulty)  # type: ignore[arg-type]


@cache
def _machine(seed: int, difficulty: str) -> Machine:
    return Machine(_site(seed, difficulty))


def _fingerprint(spec: SiteSpec) -> str:
    return spec.model_copy(update={"name": "x"}).model_dump_json()


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_seeds_give_distinct_sites_that_survive_a_yaml_round_trip(difficulty: str, tmp_path: Path) -> None:
    # synthesize_site validates what it returns; what `cua sites synth` writes must be that site
    seeds = range(8) if difficulty == "easy" else range(2)
    specs = [_site(s, difficulty) for s in seeds]
    for spec in specs:
        dump_spec(spec, tmp_path / "site.yaml")
        assert load_spec(tmp_path / "site.yaml") == spec
    assert len({_fingerprint(s) for s in specs}) == len(specs)


def test_same_seed_same_site() -> None:
    assert synthesize_site(3, "easy") == _site(3, "easy")


def test_difficulty_sets_size_and_depth() -> None:
    def deepest(d: str) -> int:
        m = _machine(0, d)
        return max(m.distance(m.initial, g.id) or 0 for g in m.spec.goals)

    assert deepest("easy") < deepest("hard")
    assert len(_site(0, "easy").pages) < len(_site(0, "hard").pages)


def test_hard_sites_have_a_million_states_and_records_and_their_goals_are_solved() -> None:
    from fsm_sites.engine.machine import compile_site
    from fsm_sites.spec.types import MapT, RecordT, SeqT

    spec = _site(0, "hard")
    machine = compile_site(spec)
    kinds = {type(t).__name__ for t in machine.schema.variables.values()}
    assert any(isinstance(t, SeqT) and isinstance(t.item, RecordT) for t in machine.schema.variables.values()), kinds
    assert any(p.params for p in spec.pages)
    counted = machine.graphs.count_states(1_000_000)
    assert counted.count == 1_000_000 and not counted.exact  # at least a million reachable states
    for goal in spec.goals:  # each goal's oracle path, from the search, reaches it
        path = machine.shortest_paths(machine.initial, goal.id, limit=1)[0]
        state = machine.initial
        for edge in path:
            state = machine.step(state, edge.to_event())[1]
        assert machine.goal_predicate(goal.id)(state) and len(path) >= 2
    shop = compile_site(_site(2, "hard"))
    assert any(isinstance(t, MapT) for t in shop.schema.variables.values())  # a cart with quantities


def test_some_sites_get_a_sortable_paged_table_whose_goals_sort_or_page() -> None:
    tabled = [(s, d) for s in range(8) for d in ("easy", "medium") if "history" in {p.id for p in _site(s, d).pages}]
    assert 1 <= len(tabled) < 16  # a third of the time, from a generator of its own
    machine = _machine(*tabled[0])
    row = next(e for e in machine.pages["history"].elements if e.id == "row")
    assert (row.sort, row.per_page, row.pager) == ("history_sort", 3, "history_page")
    top = machine.shortest_paths(machine.initial, "history_top")[0]
    assert [e.value for e in top if e.event == "sort"] == ["amount", "-amount"]  # what the headings ask for
    oldest = machine.shortest_paths(machine.initial, "history_oldest")
    assert all(any(e.event in ("sort", "page") for e in path) for path in oldest)  # newest first: sort or page


def test_half_of_the_tables_get_a_per_row_action_whose_goal_pages_or_sorts_to_its_row() -> None:
    tabled = [(s, d) for s in range(8) for d in ("easy", "medium") if "history" in {p.id for p in _site(s, d).pages}]
    flagged = [case for case in tabled if "history_flag" in {g.id for g in _site(*case).goals}]
    assert flagged  # half of the tables (a draw of the table generator's own, after the rest of the table)
    machine = _machine(*flagged[0])
    flag = next(t for t in machine.spec.transitions if t.page == "history" and t.element == "flag")
    assert flag.effects[0].where == "it.ref == row.ref"  # the row the button is on, not every row
    path = machine.shortest_paths(machine.initial, "history_flag")[0]
    assert path[-1].element == "flag" and any(e.event in ("sort", "page") for e in path[:-1])


def test_bad_difficulty_is_refused() -> None:
    with pytest.raises(ValueError, match="expected difficulty in"):
        synthesize_site(0, "impossible")  # type: ignore[arg-type]


_cases = st.tuples(st.integers(0, 5), st.sampled_from(["easy", "easy", "medium"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases, pick=st.randoms(use_true_random=False))
def test_shortest_paths_reach_goal_and_distance_drops_by_one(case: tuple[int, str], pick) -> None:
    machine = _machine(*case)
    graph = machine.graphs.graph()
    goal = machine.goal_predicate(pick.choice(machine.spec.goals).id)
    dist = machine.graphs.distances(goal)
    start = pick.choice(graph.states)
    if start not in dist:
        assert machine.shortest_paths(start, goal) == []
        return
    paths = machine.shortest_paths(start, goal, limit=4)
    assert paths
    for path in paths:
        assert len(path) == dist[start]
        state = start
        for edge in path:
            before = dist[state]
            fired = machine.step(state, edge.to_event())
            assert fired is not None and fired[0] == edge
            state = fired[1]
            assert dist[state] == before - 1
        assert goal(state)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases, pick=st.randoms(use_true_random=False))
def test_step_agrees_with_enabled(case: tuple[int, str], pick) -> None:
    machine = _machine(*case)
    state = pick.choice(machine.graphs.graph().states)
    enabled = machine.enabled(state)
    for edge, nxt in enabled:
        assert machine.step(state, edge.to_event()) == (edge, nxt)
    for element in machine.pages[state.page_id].elements:
        for event in ("click", "input", "select", "check", "uncheck", "hover", "close"):
            fired = machine.step(state, _event(state.page, element.id, event, "no-such-value"))
            # free text (a search query) keeps what was typed: the machine sees its class
            assert fired is None or (fired[0], machine.canonical(fired[1])) in enabled


def _event(page: str, element: str, event: str, value: str):
    from fsm_sites.engine.state import UIEvent

    return UIEvent(page, element, event, value)
