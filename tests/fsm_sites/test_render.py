"""The renderer without a browser: determinism, seeds, element drawing."""

from __future__ import annotations

import re

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import UIEvent
from fsm_sites.render import THEMES, choose_style, render_page
from fsm_sites.spec.site import EVENTS_BY_KIND
from tests.fsm_sites.widgets_spec import tiny_shop, widgets_spec


def test_same_state_and_seed_give_identical_html() -> None:
    spec = tiny_shop()
    machine = Machine(spec)
    for state in machine.graphs.graph().states[:60]:
        first = render_page(spec, state, seed=7, machine=machine)
        again = render_page(spec, state, seed=7, machine=Machine(spec))
        assert first == again


def test_seeds_vary_theme_and_layout() -> None:
    spec = widgets_spec()
    machine = Machine(spec)
    pages = {render_page(spec, machine.initial, seed=s, machine=machine) for s in range(12)}
    assert len(pages) >= 10
    themes = {choose_style(s)[0].name for s in range(300)}
    assert themes == {t.name for t in THEMES}  # every variant of every family turns up
    layouts = {choose_style(s)[1] for s in range(40)}
    assert {lay.nav for lay in layouts} == {"top", "left"}
    assert {lay.collection for lay in layouts} == {"grid", "list"}
    assert any(lay.distractors > 0 for lay in layouts)


def test_only_visible_elements_carry_data_el() -> None:
    spec = widgets_spec()
    machine = Machine(spec)
    items = machine.step(machine.initial, UIEvent("general", "tab_items", "click"))[1]
    html = render_page(spec, items, seed=0, machine=machine)
    drawn = set(re.findall(r'data-el="([^"]+)"', html))
    assert drawn == {e.id for e in machine.views.visible_elements(items)}
    assert "alpha" in drawn and "beta" not in drawn


def test_every_interactive_element_is_drawn_with_its_kind() -> None:
    spec = widgets_spec()
    machine = Machine(spec)
    html = render_page(spec, machine.initial, seed=3, machine=machine)
    for el in spec.pages[0].elements:
        assert f'data-el="{el.id}" data-kind="{el.kind}"' in html, el.id
        if "click" in EVENTS_BY_KIND[el.kind] and not el.options:
            assert re.search(rf'data-el="{el.id}"[^>]*data-ev="click"', html), el.id


def test_bound_values_are_shown() -> None:
    spec = widgets_spec()
    machine = Machine(spec)
    state = machine.initial.with_vars({"newsletter": True, "city": "Oslo", "size": "m", "theme": "dark"})
    html = render_page(spec, state, seed=1, machine=machine)
    assert re.search(r'<input type="checkbox" checked>', html)
    assert 'value="Oslo"' in html
    assert '<span>Medium</span><span class="caret">' in html
    assert re.search(r'class="radio checked"[^>]*data-value="dark"', html)
    assert re.search(r'class="tab active"[^>]*data-el="tab_general"', html)


def test_modal_draws_parent_inert_beneath() -> None:
    spec = widgets_spec()
    machine = Machine(spec)
    state = machine.initial.with_page("details")
    html = render_page(spec, state, seed=2, machine=machine)
    assert 'class="backdrop"' in html and "<div inert>" in html
    assert "Alpha" in html  # the parent's list is drawn ...
    assert set(re.findall(r'data-el="([^"]+)"', html)) == {"close"}  # ... but only the modal is live


def test_every_family_has_light_and_dark_variants_and_its_body_class() -> None:
    from fsm_sites.render.themes import FAMILIES, themes_of

    for family in FAMILIES:
        variants = themes_of(family.name)
        assert {t.dark for t in variants} == {False, True}, family.name
        assert all(t.name.startswith(f"{family.name}-") for t in variants)
    spec = widgets_spec()
    machine = Machine(spec)
    for seed in range(8):
        theme, _ = choose_style(seed)
        body = re.search(r'<body [^>]*class="([^"]+)"', render_page(spec, machine.initial, seed=seed,
                                                                   machine=machine)).group(1).split()
        assert f"family-{theme.family}" in body and f"theme-{theme.name}" in body
        assert ("scheme-dark" in body) == theme.dark


def test_themes_name_only_installed_fonts() -> None:
    """Each font stack's first family is installed (fc-list), so a screenshot never falls
    back to whatever the machine has: the Makefile's font packages provide them."""
    import subprocess

    installed = {name.strip() for line in subprocess.run(["fc-list", ":", "family"], capture_output=True,
                                                         text=True, check=True).stdout.splitlines()
                 for name in line.split(",")}
    for theme in THEMES:
        for stack in (theme.font, theme.heading_font):
            first = stack.split(",")[0].strip().strip("'")
            assert first in installed, (theme.name, first)
