"""Every curated site validates, meets the size and depth constraints, and matches its recipe."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_sites.engine import Machine
from fsm_sites.errors import UnknownSite
from fsm_sites.generator.compose import compose
from fsm_sites.library import EXAMPLES_DIR, list_sites, load_site
from fsm_sites.library.curated import RECIPES, write_all
from fsm_sites.spec import load_spec
from fsm_sites.validate import load_and_validate

DOMAINS = {"shop", "mail", "calendar", "bank", "travel", "settings", "forum", "file_manager", "recipes",
           "crm", "job_board", "food_delivery"}


def test_library_has_twelve_distinct_domains() -> None:
    names = list_sites()
    assert len(names) >= 12
    assert {load_site(n).domain for n in names} >= DOMAINS


@pytest.mark.parametrize("name", sorted(r.name for r in RECIPES))
def test_site_is_valid_sized_and_deep(name: str) -> None:
    spec = load_site(name)  # load_site validates; an invalid site raises SpecInvalid
    assert 10 <= len(spec.pages) <= 40
    assert any(p.kind == "modal" for p in spec.pages)
    kinds = {e.kind for p in spec.pages for e in p.elements}
    assert {"link", "button", "card", "text_input", "checkbox"} <= kinds
    assert any(e.distractor for p in spec.pages for e in p.elements)
    machine = Machine(spec)
    assert len(machine.graph()) < 6000
    depths = [machine.distance(machine.initial, g.id) for g in spec.goals]
    assert len(depths) >= 4 and all(d is not None and 2 <= d <= 15 for d in depths), depths
    assert max(depths) >= 6  # at least one multi-page flow


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


def test_unknown_site_names_the_choices() -> None:
    with pytest.raises(UnknownSite, match="expected one of the library sites.*'shop'.*got 'nope'"):
        load_site("nope")


def test_doc_example_is_the_example_file() -> None:
    import yaml

    doc = (Path(__file__).parents[2] / "docs" / "fsm_spec.md").read_text()
    block = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == yaml.safe_load((EXAMPLES_DIR / "tiny_shop.yaml").read_text())
