"""Whole-spec validation: every problem at once, each placed by id, without building the graph.

Three layers, each run only if the one before found nothing:
1. shape: pydantic errors, placed by id where the item has one (``transitions.place.when``);
2. static (``fsm_sites.spec.model``): names, types of every expression, references, events the
   element can send, values in their domains;
3. behaviour, by goal-directed search from the initial state (``fsm_sites.engine.search``): no
   two transitions enabled for the same event in a reachable state, every page, goal and
   named start state reachable; then the reachable states are counted up to a budget
   (exact below it, a lower bound above it), and a spec's ``max_states`` is enforced,
   naming the variables that multiply the states.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from fsm_sites.engine import cache
from fsm_sites.engine.machine import compile_site
from fsm_sites.errors import SEARCH_BUDGET, SearchBudgetExceeded, SpecInvalid, SpecProblem
from fsm_sites.spec.model_build import build_model
from fsm_sites.spec.site import SiteSpec
from fsm_sites.spec.types import show_value
from fsm_sites.validation.behaviour import check_behaviour

# libyaml's loader when present: the library's files parse ~10x faster than in pure Python
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
COUNT_BUDGET = 50_000  # states counted before validation reports a lower bound instead


@dataclass
class ValidationReport:
    """What validation found; ``to_json()`` is what ``cua sites validate --json`` prints."""

    site: str
    problems: list[SpecProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # checks that could not be decided
    warnings: list[str] = field(default_factory=list)  # the spec works, but likely not as meant
    states: int | None = None  # reachable states counted (None: not counted)
    states_exact: bool = False  # False: ``states`` is a lower bound
    goal_depths: dict[str, int | None] = field(default_factory=dict)  # from the goal's start (else the initial state)
    # per goal: "reachable" (a path found), "unreachable" (proved: a problem) or "undecided" (the search
    # ran out of budget before either)
    goal_status: dict[str, str] = field(default_factory=dict)
    search_budget: int = SEARCH_BUDGET  # states each search may expand
    seconds: float = 0.0

    @property
    def valid(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"site": self.site, "valid": self.valid,
                "problems": [{"place": p.place, "message": p.message} for p in self.problems],
                "notes": self.notes, "warnings": self.warnings, "reachable_states": self.states, "reachable_states_exact": self.states_exact,
                "reachable_states_at_least": self.states, "goal_depths": self.goal_depths,
                "goal_status": self.goal_status,
                "seconds": round(self.seconds, 3)}


def validate_spec(data: dict[str, Any] | SiteSpec) -> list[SpecProblem]:
    """Every problem of a spec (empty when it is valid)."""
    return check_spec(data)[1].problems


def check_spec(data: dict[str, Any] | SiteSpec, *, count_budget: int = COUNT_BUDGET,
               search_budget: int = SEARCH_BUDGET) -> tuple[SiteSpec | None, ValidationReport]:
    """The parsed spec (None if its shape is wrong) and the full report."""
    start = time.perf_counter()
    name = data.name if isinstance(data, SiteSpec) else str(data.get("name", "spec"))
    report = ValidationReport(name)
    spec = data if isinstance(data, SiteSpec) else _parse(data, report)
    if spec is not None:
        model = build_model(spec)
        report.problems.extend(model.problems)
        if not report.problems:
            check_behaviour(spec, report, count_budget, search_budget)
    report.seconds = time.perf_counter() - start
    return spec, report


def load_and_validate(path: str | Path, *, use_cache: bool = True) -> SiteSpec:
    """Load a YAML/JSON spec and validate it; raises ``SpecInvalid`` listing every problem.

    A spec validated before (same content) is not checked again: its report is read from
    the cache beside the file (``fsm_sites.engine.cache``). The spec's Machine is kept for
    ``fsm_sites.engine.machine.compile_site``.
    """
    path = Path(path)
    data = read_spec_data(path)
    try:
        spec = SiteSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecInvalid([_shape_problem(err, data) for err in exc.errors()], str(path)) from None
    cached = cache.read(path, spec) if use_cache else None
    if cached is not None and cached.get("report", {}).get("valid"):
        machine = compile_site(spec)
        machine.import_report(cached["report"])
        machine.import_knowledge(cached.get("distances", {}))
    else:
        _, report = check_spec(spec)
        if report.problems:
            raise SpecInvalid(report.problems, str(path))
        if use_cache:
            cache.write(path, spec, {"report": report.to_json()})
    if use_cache:
        cache.remember_at_exit(path, spec, compile_site(spec))
    return spec


def read_spec_data(path: Path) -> dict[str, Any]:
    """The decoded YAML/JSON of a spec file; ``SpecInvalid`` when it cannot be read or is
    not a mapping."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_YAML_LOADER)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise SpecInvalid([SpecProblem("", f"expected a readable YAML/JSON file, got {exc}")], str(path)) from exc
    if not isinstance(data, dict):
        problem = SpecProblem("", f"expected a mapping at the top of the file, got {type(data).__name__}")
        raise SpecInvalid([problem], str(path))
    return data


def validate_spec_data(data: object, *, source: str = "spec") -> SiteSpec:
    """A spec from decoded YAML/JSON data (e.g. a spec posted to the control API); raises
    ``SpecInvalid`` listing every problem."""
    if not isinstance(data, dict):
        problem = SpecProblem("", f"expected a mapping at the top, got {type(data).__name__}")
        raise SpecInvalid([problem], source)
    spec, report = check_spec(data)
    if spec is None or report.problems:
        raise SpecInvalid(report.problems, source)
    return spec


def _parse(data: dict[str, Any], report: ValidationReport) -> SiteSpec | None:
    try:
        return SiteSpec.model_validate(data)
    except ValidationError as exc:
        report.problems.extend(_shape_problem(err, data) for err in exc.errors())
        return None


def _shape_problem(err: Any, data: Any) -> SpecProblem:
    """A pydantic error placed by id where the item has one: ``transitions.place.when``."""
    place, node = "", data
    for part in err["loc"]:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and part < len(node) else None
            ident = item.get("id") or item.get("name") if isinstance(item, dict) else None
            place += f".{ident}" if isinstance(ident, str) and ident else f"[{part}]"
            node = item
        else:
            place += f".{part}" if place else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    got = err.get("input")
    if err.get("type") == "string_type" and (isinstance(got, (bool, int, float)) or got is None):
        # YAML reads an unquoted yes/no/on/off/true/false as a boolean, null or ~ as nothing, 7 as a number
        if isinstance(got, bool):
            why, quoted = "YAML reads an unquoted yes, no, on, off, true or false as a boolean", "'yes' (the word you wrote)"
        elif got is None:
            why, quoted = "YAML reads an unquoted null or ~ as nothing", "'null'"
        else:
            why, quoted = "YAML reads it as a number", f"'{got}'"
        return SpecProblem(place, f"expected text, got {_show(got)}: {why}; quote it, e.g. {quoted}")
    return SpecProblem(place, f"{err['msg']} (got {_show(got)})")


def _show(value: Any) -> str:
    return show_value(value) if not isinstance(value, dict) or len(str(value)) < 80 else "{...}"


__all__ = ["COUNT_BUDGET", "SEARCH_BUDGET", "SearchBudgetExceeded", "ValidationReport", "check_spec", "load_and_validate",
           "validate_spec"]
