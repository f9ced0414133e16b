"""The curated site library: YAML specs under ``sites/`` (see ``curated.py`` for their recipes).

    list_sites() -> ["bank", "calendar", ...]
    load_site("shop") -> SiteSpec        # validated, cached
    load_machine("shop") -> Machine      # compiled engine, cached (graphs and distances inside)
    site_path("shop") -> Path
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fsm_sites.engine.machine import Machine, compile_site
from fsm_sites.errors import UnknownSite
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import load_and_validate

SITES_DIR = Path(__file__).parent / "sites"
EXAMPLES_DIR = Path(__file__).parent / "examples"


def list_sites() -> list[str]:
    """Names of the curated sites, sorted."""
    return sorted(p.stem for p in SITES_DIR.glob("*.yaml"))


def site_path(name: str) -> Path:
    """The YAML file of a curated site (or of an example, e.g. ``tiny_shop``)."""
    for directory in (SITES_DIR, EXAMPLES_DIR):
        path = directory / f"{name}.yaml"
        if path.is_file():
            return path
    raise UnknownSite(f"expected one of the library sites {list_sites()}, got {name!r}")


@cache
def load_site(name: str) -> SiteSpec:
    """Load and validate a curated site by name (cached; specs are immutable)."""
    return load_and_validate(site_path(name))


@cache
def load_machine(name: str) -> Machine:
    """The engine of a curated site, shared so its cached graph and distances are reused
    (the one its validation built and explored)."""
    return compile_site(load_site(name))
