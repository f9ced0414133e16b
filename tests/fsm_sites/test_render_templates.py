"""Pictures, icons and page templates without a browser: deterministic, distinct, vendored,
and chosen by content (a product grid, a data table, a detail hero, switches)."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.library import load_machine, load_site
from fsm_sites.render import render_page
from fsm_sites.render.icons import ICON_NAMES, icon_for, icon_svg, vendored_version
from fsm_sites.render.images import avatar, initials, picture
from fsm_sites.render.look import choose_look, split_description
from fsm_sites.spec.site import SiteSpec
from fsm_sites.spec.types import from_json

NAMES = ("Desk lamp", "Coffee mug", "Office chair", "Wool rug", "Ana Ruiz", "Ben Okafor", "resume.pdf",
         "New York - Paris", "Tonkotsu ramen", "Margherita pizza")


@pytest.mark.parametrize("kind", ["product", "avatar", "illustration"])
def test_pictures_are_deterministic_and_distinct_per_name_and_seed(kind) -> None:
    drawn = [picture(kind, name, 3) for name in NAMES]
    assert drawn == [picture(kind, name, 3) for name in NAMES]  # same name and seed, same bytes
    assert len(set(drawn)) == len(NAMES)  # every name its own picture
    assert picture(kind, "Desk lamp", 3) != picture(kind, "Desk lamp", 4)  # the seed varies them too
    for svg in drawn:
        assert svg.startswith("<svg ") and svg.endswith("</svg>") and 'aria-hidden="true"' in svg
        ids = re.findall(r'id="([^"]+)"', svg)
        assert all(f"url(#{i})" in svg for i in ids)  # every gradient or clip is used, none dangling


def test_pictures_of_two_names_never_share_an_id() -> None:
    ids = [set(re.findall(r'id="([^"]+)"', picture(k, n, 1))) for k in ("product", "avatar", "illustration")
           for n in NAMES]
    assert all(not (a & b) for i, a in enumerate(ids) for b in ids[i + 1:])


def test_avatar_shows_initials_and_bad_kinds_are_refused() -> None:
    assert initials("Ana Ruiz") == "AR" and initials("resume.pdf") == "RP" and initials("…") == "?"
    assert initials("sam@acme.io") == "S" and initials("sam.lee@acme.io") == "SL"
    assert ">AR</text>" in avatar("Ana Ruiz", 0)
    with pytest.raises(ValueError, match="expected an image kind among"):
        picture("photo", "x", 0)  # type: ignore[arg-type]


def test_every_icon_the_renderer_names_is_vendored_with_its_licence() -> None:
    root = resources.files("fsm_sites.render") / "static" / "icons"
    vendored = {p.name.removesuffix(".svg") for p in root.iterdir() if p.name.endswith(".svg")}
    assert vendored == set(ICON_NAMES)  # no icon missing, none shipped unused
    assert "ISC License" in (root / "LICENSE").read_text(encoding="utf-8")
    package, version, licence = vendored_version().split()
    assert package == "lucide-static" and re.fullmatch(r"\d+\.\d+\.\d+", version) and licence == "ISC"
    svg = icon_svg("trash-2")
    assert svg.startswith('<svg class="icon" aria-hidden="true"') and "<!--" not in svg
    assert not re.search(r"\swidth=", svg)  # sized by CSS
    with pytest.raises(KeyError, match="vendored icons"):
        icon_svg("no-such-icon")


@pytest.mark.parametrize(("label", "element_id", "icon"), [
    ("Add to cart", "add", "shopping-cart"), ("Add to campaign", "add", "flag"), ("Add a note", "add", "plus"), ("Delete", "to_trash", "trash-2"),
    ("Settings", "nav_settings", "settings"), ("Remove Desk lamp", "rm", "trash-2"), ("+", "more", "plus"),
    ("Next page", "next", "arrow-right"), ("Back to products", "back", "arrow-left"), ("Book this flight", "book", "plane"), ("Continue", "x", "arrow-right"),
    ("Ana Ruiz", "nav_contacts", "users"), ("Ana Ruiz", "ana", None),
])
def test_icons_follow_the_label_then_the_id(label, element_id, icon) -> None:
    assert icon_for(label, element_id) == icon


def test_a_description_gives_its_price_and_badge_and_keeps_the_rest() -> None:
    lamp = split_description("$25 - warm LED light")
    assert (lamp.price, lamp.badge, lamp.rest) == ("$25", None, "warm LED light")
    lead = split_description("Acme Corp - Lead")
    assert (lead.price, lead.badge, lead.rest) == (None, "Lead", "Acme Corp")
    flight = split_description("Tue 18:40, 7h 20m, $51")  # a price that does not lead stays text
    assert (flight.price, flight.badge, flight.rest) == (None, None, "Tue 18:40, 7h 20m, $51")


def test_looks_vary_with_the_seed() -> None:
    looks = {choose_look(s, "shop") for s in range(40)}
    assert {lk.button_icons for lk in looks} == {True, False} and {lk.hero for lk in looks} == {"banner", "side"}
    assert choose_look(5, "shop") == choose_look(5, "shop")


def test_a_shop_catalog_is_a_product_grid_with_pictures_and_prices() -> None:
    spec, machine = load_site("shop"), load_machine("shop")
    html = render_page(spec, machine.initial.with_page("products"), seed=2, machine=machine)
    cards = re.findall(r'<div class="card media"[^>]*data-el="(\w+)"[^>]*data-ev="click"><span class="card-media '
                       r'product"><svg class="img product"', html)
    assert cards == ["lamp", "mug", "chair"]
    assert re.findall(r'<span class="price">([^<]+)</span>', html) == ["$25", "$9", "$149"]
    assert '<span class="title">Desk lamp</span>' in html and 'class="thumb"' not in html
    assert html == render_page(spec, machine.initial.with_page("products"), seed=2, machine=machine)


def test_a_hub_page_draws_tiles_with_icons() -> None:
    spec, machine = load_site("shop"), load_machine("shop")
    html = render_page(spec, machine.initial, seed=2, machine=machine)
    assert re.search(r'class="card tile"[^>]*data-el="go_cart"[^>]*><span class="tile-mark"><svg class="icon '
                     r'tile-icon"', html)


def _clinic_busy() -> tuple[object, object, State]:
    spec, machine = load_site("clinic"), load_machine("clinic")
    start = next(s for s in spec.starts if s.id == "busy_week")
    state = machine.initial.with_vars({k: from_json(v) for k, v in start.vars.items()})
    return spec, machine, state.with_page(start.page)


def test_records_are_a_data_table_with_headers_and_live_buttons() -> None:
    spec, machine, state = _clinic_busy()
    html = render_page(spec, state, seed=1, machine=machine)  # type: ignore[arg-type]
    table = re.search(r'<table class="data-table[^"]*">(.*?)</table>', html)
    assert table, "the appointments are not a table"
    heads = re.findall(r'<th scope="col">([^<]*)</th>', table.group(1))
    assert heads[:4] == ["Pet", "Service", "Day", "Time"]
    rows = re.findall(r'<tr data-el="row" data-kind="text" data-value="(\d)" aria-label="([^"]+)">', table.group(1))
    assert len(rows) == 3 and rows[0][1].startswith("Rex: Check-up")
    assert len(re.findall(r'data-el="cancel_row"[^>]*data-ev="click"', table.group(1))) == 3


def test_a_detail_page_has_a_hero_picture() -> None:
    spec, machine = load_site("shop"), load_machine("shop")
    state = machine.initial.with_page("products_item(lamp)")
    html = render_page(spec, state, seed=6, machine=machine)
    assert re.search(r'<div class="hero hero-(banner|side) product"><svg class="img product"', html)
    assert html.count('data-el="act"') == 1


def test_check_boxes_alone_are_a_settings_list_of_switches() -> None:
    spec, machine = load_site("settings"), load_machine("settings")
    seed = next(s for s in range(40) if choose_look(s, spec.domain).toggles)
    html = render_page(spec, machine.initial.with_page("cfg_privacy"), seed=seed, machine=machine)
    assert re.search(r'<form class="panel form settings-list"[^>]*><div class="field"><label class="check switch"'
                     r' data-el="\w+" data-kind="checkbox"><input type="checkbox">', html)


def test_rows_of_a_product_collection_start_with_the_items_picture() -> None:
    spec, machine = load_site("shop"), load_machine("shop")
    cart = {key: 0 for key in ("lamp", "mug", "chair", "rug", "kettle", "clock")} | {"lamp": 1, "mug": 2}
    state = machine.initial.with_vars({"cart": from_json(cart)}).with_page("cart")
    html = render_page(spec, state, seed=21, machine=machine)
    rows = re.findall(r'<div class="repeat-row"><span class="row-media product">(<svg .*?</svg>)</span>', html)
    assert rows == [picture("product", "Desk lamp", 21, thumbnail=True),
                    picture("product", "Coffee mug", 21, thumbnail=True)]
    assert 'viewBox="28 6 104 104"' in rows[0]  # a thumbnail frames the object closely


def test_cards_named_by_weekdays_are_a_week_calendar() -> None:
    spec = SiteSpec.model_validate({
        "name": "week", "title": "Week", "domain": "calendar", "start_page": "week",
        "pages": [{"id": "week", "title": "This week", "elements": [
            {"id": day, "kind": "card", "label": label, "description": events}
            for day, label, events in (("mon", "Monday", "3 events"), ("tue", "Tuesday", "1 event"),
                                       ("wed", "Wednesday", "No events"), ("thu", "Thursday", "2 events"))]}],
        "transitions": [],
    })
    machine = Machine(spec)
    html = render_page(spec, machine.initial, seed=2, machine=machine)
    assert '<div class="collection calendar-week">' in html
    assert re.findall(r'<div class="cal-head" aria-hidden="true">(\w+)</div>', html)[:2] == ["Mon", "Tue"]
    cells = re.findall(r'<div class="(?:card cal-day|cal-day empty)"(?: data-el="(\w+)")?', html)
    assert [el or "-" for el in cells] == ["mon", "tue", "wed", "thu", "-", "-", "-"]  # each in its day's column
    assert re.search(r'class="card cal-day" data-el="mon" data-kind="card" data-ev="click"><span class="title">'
                     r"Monday</span><span class=\"desc\">3 events</span>", html)


def test_the_calendar_site_shows_its_month_as_a_month_calendar() -> None:
    spec, machine = load_site("calendar"), load_machine("calendar")
    html = render_page(spec, machine.initial.with_page("month"), seed=2, machine=machine)
    month = re.search(r'<div class="collection calendar-month" role="grid" aria-label="December 2026">'
                      r'<div class="cal-title">December 2026</div>(.*?)</div></main>', html, re.S)
    assert month, "the month's days are not a month calendar"
    blanks = month.group(1).count('<div class="cal-cell blank">')
    assert blanks == 1  # December 1, 2026 is a Tuesday: one blank cell before it
    assert month.group(1).count('<div class="cal-cell"><span class="day-num">') == 31 - 4  # the days without a card
    booked = re.findall(r'<div class="card cal-cell booked" data-el="(\w+)"[^>]*data-ev="click" '
                        r'aria-label="([^"]+)"><span class="day-num">(\d+)</span><span class="desc">([^<]+)', html)
    assert [(el, day, desc) for el, _, day, desc in booked] == [
        ("mon", "7", "Team standup, 3 events"), ("tue", "8", "Dentist at 09:00"), ("wed", "9", "No events"),
        ("thu", "10", "Team offsite, 2 events")]
    assert booked[1][1] == "Tue, Dec 8, 2026"  # the card's label stays its accessible name
    edge = machine.step(machine.initial.with_page("month"), UIEvent("month", "tue", "click"))
    assert edge is not None and edge[1].page == "month_item(tue)"  # a day's cell opens its page


def test_an_open_message_reads_in_a_pane_beside_the_inbox_that_opens_the_others() -> None:
    spec, machine = load_site("mail"), load_machine("mail")
    state = machine.initial.with_page("inbox_item(m3)")
    html = render_page(spec, state, seed=2, machine=machine)
    split = re.search(r'<div class="split-view"><div class="split-list"><div class="collection list inbox">(.*?)'
                      r'</div></div><section class="split-pane panel" aria-label="Reading pane">(.*?)</section>', html)
    assert split, "the open message has no reading pane beside the inbox"
    listed = re.findall(r'<div class="(card media message(?: active)?)"[^>]*data-el="(\w+)"', split.group(1))
    assert listed == [("card media message", "m1"), ("card media message", "m2"),
                      ("card media message active", "m3"), ("card media message", "m4")]
    assert "From: billing@cloudly.com" in split.group(2) and 'data-el="to_archive"' in split.group(2)
    edge = machine.step(state, UIEvent("inbox_item(m3)", "m4", "click"))  # another message opens it
    assert edge is not None and edge[1].page == "inbox_item(m4)"


def test_a_product_page_has_a_hero_and_tabs_whose_panel_follows_the_open_tab() -> None:
    spec, machine = load_site("shop"), load_machine("shop")
    state = machine.initial.with_page("products_item(lamp)")
    html = render_page(spec, state, seed=6, machine=machine)
    assert re.search(r'<div class="hero hero-(banner|side) product"><svg class="img product"', html)
    tabbed = re.search(r'<div class="tabbed"><div class="tabs" role="tablist">(.*?)</div>'
                       r'<section class="tab-panel panel" role="tabpanel">(.*?)</section>', html)
    assert tabbed, "the product page has no tabs over a panel"
    assert re.findall(r'data-el="(tab_\w+)"', tabbed.group(1)) == ["tab_overview", "tab_specs", "tab_reviews"]
    assert "weighted base" in tabbed.group(2) and "reviews" not in tabbed.group(2)
    edge = machine.step(state, UIEvent("products_item(lamp)", "tab_reviews", "click"))
    assert edge is not None
    reviews = render_page(spec, edge[1], seed=6, machine=machine)
    panel = re.search(r'role="tabpanel">(.*?)</section>', reviews)
    assert panel and "212 reviews" in panel.group(1) and "weighted base" not in panel.group(1)


def test_the_files_home_is_a_dashboard_of_stat_tiles_bound_to_its_variables() -> None:
    spec, machine = load_site("files"), load_machine("files")
    state = machine.initial.with_vars({"starred": from_json(["cv", "notes"])})
    html = render_page(spec, state, seed=2, machine=machine)
    assert '<div class="stat-tiles"><div class="stat" data-el="stat1"' in html
    # a tile bound to a set shows how many it holds, and which
    assert re.findall(r'data-el="(stat\d)" data-kind="text"><span>([^<]+)</span><span class="value">([^<]+)</span>'
                      r'(?:<span class="stat-items">([^<]+)</span>)?</div>', html) == [
        ("stat1", "Starred files", "2", "resume.pdf; notes.txt"), ("stat2", "In the trash", "0", "")]


def test_messages_are_an_inbox_led_by_their_senders() -> None:
    spec, machine = load_site("mail"), load_machine("mail")
    html = render_page(spec, machine.initial.with_page("inbox"), seed=2, machine=machine)
    assert '<div class="collection list inbox">' in html
    rows = re.findall(r'<div class="card media message"[^>]*data-el="(\w+)"[^>]*><span class="card-media avatar">'
                      r'(<svg .*?</svg>)</span><span class="card-body"><span class="title">([^<]+)</span>'
                      r'<span class="desc">([^<]+)</span>', html)
    assert [(title, desc) for _, _, title, desc in rows] == [
        ("Quarterly report", "From: finance@acme.io"), ("Lunch on Friday?", "From: sam@acme.io")]
    assert rows[1][1] == avatar("sam@acme.io", 2)  # the sender's avatar, not the subject's


def test_bound_values_side_by_side_are_stat_tiles() -> None:
    spec = SiteSpec.model_validate({
        "name": "dash", "title": "Dash", "domain": "bank", "start_page": "home",
        "variables": [{"name": "balance", "type": "int", "min": 0, "max": 9, "default": 7},
                      {"name": "alerts", "type": "bool", "default": True}],
        "pages": [{"id": "home", "title": "Overview", "elements": [
            {"id": "balance", "kind": "text", "label": "Balance", "bind": "balance"},
            {"id": "alerts", "kind": "text", "label": "Alerts on", "bind": "alerts"}]}],
        "transitions": [],
    })
    machine = Machine(spec)
    html = render_page(spec, machine.initial, seed=0, machine=machine)
    assert re.search(r'<div class="stat-tiles"><div class="stat" data-el="balance" data-kind="text"><span>Balance'
                     r'</span><span class="value">7</span></div><div class="stat" data-el="alerts"', html)
