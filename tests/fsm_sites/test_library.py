"""Every curated site validates, meets the size and depth constraints, and matches its recipe."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from fsm_sites.errors import UnknownSite
from fsm_sites.generator.compose import compose
from fsm_sites.library import EXAMPLES_DIR, list_sites, load_machine, load_site
from fsm_sites.library.curated import RECIPES, write_all
from fsm_sites.serving.sessions import SessionStore
from fsm_sites.spec.site import load_spec
from fsm_sites.validation.validate import load_and_validate

DOMAINS = {"shop", "mail", "calendar", "bank", "travel", "settings", "forum", "file_manager", "recipes",
           "crm", "job_board", "food_delivery"}


def test_library_has_twelve_distinct_domains() -> None:
    names = list_sites()
    assert len(names) >= 12
    assert {load_site(n).domain for n in names} >= DOMAINS


@cache
def _explored(name: str) -> tuple[int, dict[str, int | None]]:
    """A library site's reachable state count and each goal's depth (shortest path from the
    initial state, None when unreachable), from the engine."""
    machine = load_machine(name)
    spec = machine.spec
    states = machine.graphs.count_states(200_000)
    assert states.exact
    return states.count, {g.id: machine.distance(machine.initial, g.id) for g in spec.goals}


def _page_instances(name: str) -> int:
    """Pages counted as a user sees them: a page with a parameter once per value."""
    machine = load_machine(name)
    return sum(len(machine.schema.params[p.id][0][1].values) if machine.schema.params[p.id] else 1
               for p in machine.spec.pages)


@pytest.mark.parametrize("name", sorted(r.name for r in RECIPES))
def test_site_is_valid_sized_and_deep(name: str) -> None:
    spec = load_site(name)  # load_site validates; an invalid site raises SpecInvalid
    assert 10 <= _page_instances(name) <= 40
    assert any(p.params for p in spec.pages)  # one detail page per catalog, its item a parameter
    assert any(p.kind == "modal" for p in spec.pages)
    kinds = {e.kind for p in spec.pages for e in p.elements}
    assert {"link", "button", "card", "text_input", "checkbox"} <= kinds
    assert any(e.distractor for p in spec.pages for e in p.elements)
    states, goal_depths = _explored(name)
    assert states < 60_000  # small enough for the full-graph reference of the equivalence test
    depths = list(goal_depths.values())
    assert len(depths) >= 4 and all(d is not None and 2 <= d <= 15 for d in depths), goal_depths
    assert max(depths) >= 6  # at least one multi-page flow


def test_library_goals_are_2_to_15_steps_deep() -> None:
    depths = {f"{name}/{goal}": d for name in list_sites() for goal, d in _explored(name)[1].items()}
    reachable = [d for d in depths.values() if d is not None]
    assert len(reachable) == len(depths), {g: d for g, d in depths.items() if d is None}
    assert (min(reachable), max(reachable)) == (2, 15), depths


def test_at_least_four_sites_have_a_goal_12_steps_deep() -> None:
    deepest = {name: max((d for d in _explored(name)[1].values() if d is not None), default=0)
               for name in list_sites()}
    assert sum(d >= 12 for d in deepest.values()) >= 4, deepest


def test_at_least_three_sites_hold_records_or_structures_a_flat_spec_could_not() -> None:
    from fsm_sites.spec.types import EnumT, MapT, RecordT, SeqT

    def structured(name: str) -> set[str]:
        kinds = set()
        for vtype in load_machine(name).schema.variables.values():
            if isinstance(vtype, MapT) and not isinstance(vtype.value, EnumT):
                kinds.add("quantities")
            elif isinstance(vtype, MapT):
                kinds.add("folders")
            elif isinstance(vtype, SeqT) and isinstance(vtype.item, RecordT):
                kinds.add("records")
        return kinds

    found = {name: structured(name) for name in list_sites()}
    assert "quantities" in found["shop"] and "folders" in found["mail"] and "records" in found["calendar"], found
    assert sum(bool(kinds) for kinds in found.values()) >= 3


def test_yaml_files_match_recipes(tmp_path: Path) -> None:
    for path in write_all(tmp_path):
        assert load_spec(path) == load_site(path.stem), f"{path.stem}.yaml is stale; run python -m fsm_sites.library.curated"


def test_recipes_compose_to_distinct_sites() -> None:
    specs = [compose(r) for r in RECIPES]
    titles = {s.title for s in specs}
    page_sets = {frozenset(p.title for p in s.pages) for s in specs}
    assert len(titles) == len(specs) and len(page_sets) == len(specs)


def test_examples_validate() -> None:
    examples = sorted(EXAMPLES_DIR.glob("*.yaml"))
    assert examples
    for path in examples:
        load_and_validate(path)


def test_served_library_site_shares_the_library_machine() -> None:
    store = SessionStore()
    store.add_site(load_site("shop"))
    assert store.machines["shop"] is load_machine("shop")


def test_unknown_site_names_the_choices() -> None:
    with pytest.raises(UnknownSite, match="expected one of the library sites.*'shop'.*got 'nope'"):
        load_site("nope")


def test_doc_example_is_the_example_file() -> None:
    import yaml

    doc = (Path(__file__).parents[2] / "docs" / "fsm_spec.md").read_text()
    block = doc.split("## A complete small example", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == yaml.safe_load((EXAMPLES_DIR / "tiny_shop.yaml").read_text())


def test_the_worked_example_is_the_file_the_docs_walk_through() -> None:
    import yaml

    from fsm_sites.validation.validate import check_spec

    doc = (Path(__file__).parents[2] / "docs" / "fsm_spec.md").read_text()
    section = doc.split("## A worked example: the clinic pattern", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```yaml\n")[1:]]
    lines = {line.rstrip() for line in (EXAMPLES_DIR / "vet_clinic.yaml").read_text().splitlines()}
    assert len(blocks) >= 7 and all(line in lines for b in blocks for line in b.splitlines()), blocks
    _, report = check_spec(yaml.safe_load((EXAMPLES_DIR / "vet_clinic.yaml").read_text()), count_budget=20_000)
    assert (report.problems, report.warnings, report.notes) == ([], [], [])
    assert (report.states, report.states_exact) == (16_970, True)  # the costs table's first row
    assert report.goal_depths == {"book_rex": 6, "add_luna": 10, "reminders": 1, "cancel_milo": 2}
