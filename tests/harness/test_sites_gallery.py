"""`cua sites gallery`: real screenshots of real states, and a page Chromium shows whole."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from fsm_sites.library import load_machine, load_site
from fsm_sites.render import choose_style, render_page
from harness.sites_gallery import GalleryConfig, build_gallery, main_states, plan, seed_for
from tests.conftest import wait_until

_IMAGES = ("[...document.images].map(i => ({src: i.getAttribute('src'), complete: i.complete,"
           " w: i.naturalWidth, h: i.naturalHeight}))")


def test_main_states_are_the_initial_state_then_new_pages_on_goal_paths() -> None:
    machine = load_machine("shop")
    states = main_states(machine, 4)
    assert states[0] == machine.initial and len(states) == 4
    assert len({s.page for s in states}) == 4  # each shows another page
    reachable = set(machine.graphs.graph().states)
    assert all(state in reachable for state in states)  # real states, not made-up ones


@pytest.mark.parametrize(("site", "template"), [
    ("mail", '<div class="split-view">'), ("calendar", '<div class="collection calendar-month"'),
    ("shop", '<div class="tabbed">'), ("files", '<div class="stat-tiles">')])
def test_the_default_main_states_show_the_sites_page_templates(site, template) -> None:
    """A gallery's three main states of a site show its template: mail's reading pane, the
    calendar's month, a product page's tabs, the files dashboard's stat tiles."""
    spec, machine = load_site(site), load_machine(site)
    pages = [render_page(spec, state, seed=0, machine=machine) for state in main_states(machine, 3)]
    assert any(template in html for html in pages), [s.page for s in main_states(machine, 3)]


def test_the_plan_takes_turns_through_families_and_shows_every_viewport() -> None:
    config = GalleryConfig(sites="shop,mail", families="all", viewports="desktop,phone", states=3)
    shots = plan(config)
    assert len(shots) == 2 * 3 * 2
    assert {s.theme.family for s in shots} == {"material", "bootstrap", "shadcn", "fluent", "enterprise"}
    assert all(choose_style(s.seed)[0] == s.theme for s in shots)  # a real layout seed's theme
    every = plan(GalleryConfig(sites="shop", families="material,fluent", viewports="phone",
                               states=2, every_family=True))
    assert [(s.index, s.theme.family) for s in every] == [(0, "material"), (0, "fluent"),
                                                          (1, "material"), (1, "fluent")]
    assert choose_style(seed_for("fluent", 2))[0].name == "fluent-dark"


@pytest.mark.asyncio(loop_scope="session")
async def test_the_gallery_page_shows_every_screenshot_in_chromium(provider, tmp_path: Path) -> None:
    out = tmp_path / "gallery"
    config = GalleryConfig(out=out, sites="shop", families="material,shadcn", viewports="phone,desktop",
                           states=2, every_family=True)
    index = await build_gallery(config, show_progress=False, provider=provider)
    pngs = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.png"))
    assert len(pngs) == 2 * 2 * 2
    for name in pngs:
        size = Image.open(io.BytesIO((out / name).read_bytes())).size
        assert size == ((390, 844) if name.endswith("-phone.png") else (1280, 800)), name
    phone = [(out / n).read_bytes() for n in pngs if n.endswith("-phone.png")]
    assert len(set(phone)) == len(phone)  # other states and themes: other pictures
    sandbox = await provider.new_browser()
    try:
        await sandbox.reset(index.as_uri(), allowed_origins=("file://",))
        loaded = await wait_until(lambda: sandbox.evaluate(
            "[...document.images].every(i => i.complete)"), timeout=10)
        images = await sandbox.evaluate(_IMAGES)
        assert loaded and sorted(i["src"] for i in images) == pngs
        assert all(i["w"] > 0 and i["h"] > 0 for i in images), images
    finally:
        await sandbox.close()
