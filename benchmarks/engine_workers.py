"""The measurements of ``bench_engine``, each run in a fresh process (``python -m
benchmarks.engine_workers KIND ARG``), which prints one JSON object: so every timing starts
from the same cold state and every peak memory (``ru_maxrss``) is the measurement's own.

Kinds: ``validate_old PATH`` / ``validate_new PATH`` / ``validate_new_exact PATH`` (today's
full-graph validation, the new one with its default count budget, the new one counting every
state), ``goals_old PATH`` / ``goals_new PATH`` (each named goal's distance and oracle path
from the initial state), ``big PATH GOAL`` (the oracle path and step verdicts of a deep goal
on a site too large to enumerate), ``big_full PATH`` (today's approach on it: the whole graph),
``big_sample PATH N`` (N states of the clinic's lower bound, each checked reachable).
"""

from __future__ import annotations

import json
import random
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def validate_old(path: str) -> dict[str, Any]:
    from benchmarks.legacy_fsm import load_legacy

    legacy = load_legacy()
    base = _rss_mb()
    seconds, spec = _timed(lambda: legacy.validate.load_and_validate(path))
    states = len(legacy.engine.compile_site(spec).graph())
    return {"seconds": seconds, "states": states, "exact": True, "rss_mb": _rss_mb(), "rss_base_mb": base}


def validate_new(path: str, budget: int | None = None) -> dict[str, Any]:
    from fsm_sites.validation.validate import COUNT_BUDGET, check_spec, read_spec_data

    data = read_spec_data(Path(path))
    base = _rss_mb()
    seconds, (_, report) = _timed(lambda: check_spec(data, count_budget=budget or COUNT_BUDGET))
    assert report.valid, report.problems
    return {"seconds": seconds, "states": report.states, "exact": report.states_exact, "rss_mb": _rss_mb(),
            "rss_base_mb": base, "notes": report.notes}


def goals_old(path: str) -> dict[str, Any]:
    from benchmarks.legacy_fsm import load_legacy

    legacy = load_legacy()
    spec = legacy.validate.load_and_validate(path)  # not timed: both sides start from a parsed spec
    machine = legacy.engine.Machine(spec)
    return _goal_queries(machine, [g.id for g in spec.goals])


def goals_new(path: str) -> dict[str, Any]:
    from fsm_sites.engine.machine import Machine
    from fsm_sites.validation.validate import load_and_validate

    spec = load_and_validate(path, use_cache=False)
    return _goal_queries(Machine(spec), [g.id for g in spec.goals])


def _goal_queries(machine: Any, goals: list[str]) -> dict[str, Any]:
    """Each goal's distance and one oracle path from the initial state (a fresh machine: the
    first query pays for whatever the engine prepares)."""
    base = _rss_mb()
    start = time.perf_counter()
    depths = {}
    for goal in goals:
        depths[goal] = machine.distance(machine.initial, goal)
        machine.shortest_paths(machine.initial, goal, limit=1)
    return {"seconds": time.perf_counter() - start, "depths": depths, "rss_mb": _rss_mb(), "rss_base_mb": base}


def big(path: str, goal: str, steps: int = 120) -> dict[str, Any]:
    """A deep goal on the clinic: the oracle path from the start (fresh process), then an agent
    that follows the oracle 70% of the time and clicks at random otherwise, every step judged
    by the site's session store exactly as the server does (``SessionStore.apply``)."""
    from fsm_sites.engine.machine import compile_site
    from fsm_sites.serving.sessions import SessionStore
    from fsm_sites.validation.validate import load_and_validate

    spec = load_and_validate(path, use_cache=False)
    machine = compile_site(spec)
    base = _rss_mb()
    oracle_s, paths = _timed(lambda: machine.shortest_paths(machine.initial, goal, limit=1))
    store = SessionStore()
    store.add_site(spec)
    session = store.create(spec.name, goal=goal)
    rng, verdicts, on_path = random.Random(7), [], 0
    for _ in range(steps):
        state = store.get(session.id).state
        if session.goal_fn(state):
            session = store.create(spec.name, goal=goal)
            continue
        if rng.random() < 0.7:
            edge = machine.shortest_paths(state, goal, limit=1)[0][0]
        else:
            edge = rng.choice(machine.enabled(state))[0]
        seconds, record = _timed(lambda e=edge, sid=session.id: store.apply(sid, e.to_event()))
        verdicts.append(seconds)
        on_path += record.verdict.on_shortest_path
    return {"oracle_seconds": oracle_s, "depth": len(paths[0]), "verdict_seconds": verdicts, "on_path_steps": on_path,
            "rss_mb": _rss_mb(), "rss_base_mb": base}


def big_full(path: str, bound: int = 300_000) -> dict[str, Any]:
    """Today's approach on the clinic: explore the whole reachable graph (it stops at ``bound``)."""
    from fsm_sites.engine.machine import compile_site
    from fsm_sites.errors import StateGraphTooLarge
    from fsm_sites.validation.validate import load_and_validate

    machine = compile_site(load_and_validate(path, use_cache=False))
    base = _rss_mb()
    start = time.perf_counter()
    try:
        states = len(machine.graphs.graph(max_states=bound))
        finished = True
    except StateGraphTooLarge:
        states, finished = bound, False
    return {"seconds": time.perf_counter() - start, "states": states, "finished": finished, "rss_mb": _rss_mb(),
            "rss_base_mb": base}


def big_sample(path: str, n: int = 60) -> dict[str, Any]:
    """States counted by ``clinic_lower_bound``, drawn at random, each checked reachable."""
    from fsm_sites.engine.machine import compile_site
    from fsm_sites.engine.state import State
    from fsm_sites.spec.types import Rec
    from fsm_sites.validation.validate import load_and_validate

    machine = compile_site(load_and_validate(path, use_cache=False))
    rng = random.Random(3)
    slots = [(d, t) for d in ("mon", "tue", "wed", "thu", "fri") for t in ("09:00", "11:00", "14:00", "16:00")]
    reached, start = 0, time.perf_counter()
    for _ in range(n):
        picked = rng.sample(slots, rng.randint(0, 3))  # as counted by clinic_lower_bound()
        bookings = tuple(Rec.of({"day": d, "time": t, "pet": rng.choice(("rex", "milo", "luna")),
                                 "service": rng.choice(("checkup", "vaccination", "dental", "grooming"))})
                         for d, t in picked)
        values = dict(machine.initial.vars) | {"bookings": machine.schema.variables["bookings"].canonical(bookings),
                                               "reminders": rng.random() < 0.5, "sms": rng.random() < 0.5,
                                               "vet": rng.choice(("any", "lee", "park"))}
        reached += machine.is_reachable(State("appointments", tuple(sorted(values.items()))))
    return {"sampled": n, "reachable": reached, "seconds": time.perf_counter() - start, "rss_mb": _rss_mb()}


KINDS: dict[str, Callable[..., dict[str, Any]]] = {
    "validate_old": validate_old, "validate_new": validate_new,
    "validate_new_exact": lambda path: validate_new(path, budget=10**7),
    "goals_old": goals_old, "goals_new": goals_new, "big": big, "big_full": big_full,
    "big_sample": lambda path, n: big_sample(path, int(n)),
}

if __name__ == "__main__":
    kind, *args = sys.argv[1:]
    print(json.dumps(KINDS[kind](*args)))
