"""The goal-directed verifier equals the full-graph engine on every curated site.

For random reachable states and random goals (the spec's named goals, exact target
states, goals over structured state), the search's distances, shortest-path sets and
step verdicts must equal what a breadth-first search of the whole reachable graph gives.
The full graph is the reference; the search never looks at it (checked below).
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm_sites.engine.fullgraph import FullGraph
from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State
from fsm_sites.library import list_sites, load_site
from fsm_sites.serving.verdict import StepVerdict
from fsm_sites.synthesis.goals import goal_about, random_walk, structured


@cache
def _reference(name: str) -> tuple[Machine, Machine, list[State]]:
    """(a machine whose full graph is the reference, a fresh machine that only searches, the states)."""
    spec = load_site(name)
    full = Machine(spec)
    states = full.graphs.graph().states
    return full, Machine(spec), states


def _goals(full: Machine, states: list[State], pick) -> list:
    """The named goals, an exact target state, and goals over structured state, each target a
    few random steps from a random reachable state."""
    goals = [full.goal_predicate(g.id) for g in full.spec.goals]
    goals.append(full.state_goal(random_walk(full, pick.choice(states), pick.randint(1, 6), pick)))
    for _ in range(2):
        end = random_walk(full, pick.choice(states), pick.randint(1, 6), pick)
        for var in structured(full):
            found = goal_about(full, end, var, pick)
            if found:
                goals.append("expr:" + found[0])
    return goals


def _verdict(machine: Machine, before: State, after: State, goal) -> StepVerdict:
    return StepVerdict(state_before=before.key(), state_after=after.key(), transition_fired=True,
                       on_shortest_path=machine.on_shortest_path(before, after, goal),
                       distance_before=machine.distance(before, goal), distance_after=machine.distance(after, goal),
                       goal_reached=machine.resolve_goal(goal)(after))


def _full_verdict(full: Machine, dist: dict, before: State, after: State, goal) -> StepVerdict:
    d0, d1 = dist.get(before), dist.get(after)
    return StepVerdict(state_before=before.key(), state_after=after.key(), transition_fired=True,
                       on_shortest_path=d0 is not None and d1 is not None and d0 > 0 and d1 == d0 - 1,
                       distance_before=d0, distance_after=d1, goal_reached=full.resolve_goal(goal)(after))


def _full_paths(full: Machine, dist: dict, start: State, limit: int) -> list[list]:
    """Every shortest path by DFS over the full graph (the older engine's algorithm)."""
    graph = full.graphs.graph()
    paths: list[list] = []
    stack = [(start, [])]
    while stack and len(paths) < limit:
        state, path = stack.pop()
        if dist[state] == 0:
            paths.append(path)
            continue
        nexts = [(e, n) for e, n in graph.edges[state] if dist.get(n) == dist[state] - 1]
        for edge, nxt in reversed(nexts):
            stack.append((nxt, path + [edge]))
    return paths


@pytest.mark.parametrize("name", list_sites())
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pick=st.randoms(use_true_random=False))
def test_search_equals_the_full_graph(name: str, pick) -> None:
    full, searched, states = _reference(name)
    for goal in _goals(full, states, pick):
        dist = full.graphs.distances(goal)
        for state in pick.sample(states, 3):
            assert searched.distance(state, goal) == dist.get(state), (name, goal, state.key())
            if state in dist:
                want = _full_paths(full, dist, state, 16)
                assert searched.shortest_paths(state, goal, limit=16) == want, (name, goal, state.key())
            steps = full.enabled(state)
            on_path = [a for _, a in steps if a in dist and state in dist and dist[a] == dist[state] - 1]
            for after in on_path[:2] + [a for _, a in pick.sample(steps, min(3, len(steps)))]:
                assert _verdict(searched, state, after, goal) == _full_verdict(full, dist, state, after, goal)


def test_the_search_never_builds_the_graph(monkeypatch) -> None:
    _, _, states = _reference("shop")
    machine = Machine(load_site("shop"))
    monkeypatch.setattr(FullGraph, "graph", lambda *a, **k: pytest.fail("the search built the full graph"))
    monkeypatch.setattr(FullGraph, "distances", lambda *a, **k: pytest.fail("the search used full-graph distances"))
    for goal in machine.spec.goals:
        assert machine.shortest_paths(machine.initial, goal.id)
    assert machine.is_reachable(states[-1])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pick=st.randoms(use_true_random=False))
def test_search_equals_a_bfs_on_a_site_too_large_to_enumerate(pick) -> None:
    """On the clinic (over 10^7 states), distances from states near the start match a BFS
    run from each of them up to the distance the search found."""
    machine = Machine(load_site("clinic"))
    start = random_walk(machine, machine.initial, pick.randint(0, 12), pick)
    for goal in ("rex_vaccination", "notifications", "no_milo"):
        d = machine.distance(start, goal)
        assert d is not None and d == _bfs_distance(machine, start, machine.goal_predicate(goal), d)


def _bfs_distance(machine: Machine, start: State, goal, bound: int) -> int | None:
    frontier, seen = [start], {start}
    for depth in range(bound + 1):
        if any(goal(s) for s in frontier):
            return depth
        frontier = [n for s in frontier for _, n in machine.enabled(s) if not (n in seen or seen.add(n))]
    return None
