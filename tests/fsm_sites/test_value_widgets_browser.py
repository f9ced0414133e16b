"""Sliders, date pickers and drag-to-reorder lists in real Chromium: a press, drag or click
sends the widget's event with its value (and nothing when the value stays), the page
shows the new state, the same state, seed and viewport give the same pixels, a phone gets
touch-sized parts, and the element list names each part."""

from __future__ import annotations

import pytest

from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State
from fsm_sites.render import choose_style
from fsm_sites.serving.server import SiteServer
from sandboxes.browser.elements import ELEMENTS_JS
from sandboxes.viewports import VIEWPORTS
from tests.fsm_sites.value_widgets_spec import planner_spec, templates_spec

pytestmark = pytest.mark.asyncio(loop_scope="session")

SEEDS = (0, next(s for s in range(1, 50) if choose_style(s)[0].family != choose_style(0)[0].family))
OPEN = 'plan{"back":0,"back_open":false,"budget":3,"day":"2026-06-13","day_open":true,"stars":3,' \
       '"stops":["rome","paris","lisbon"]}'
_BOX = "(sel) => { const r = document.querySelector(sel).getBoundingClientRect();" \
       " return {x: r.left + r.width / 2, y: r.top + r.height / 2, left: r.left, w: r.width, h: r.height}; }"


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([planner_spec()]) as srv:
        yield srv


async def _open(browser, server, seed: int, viewport: str = "desktop", state: str | None = None):
    session = server.create_session("planner", goal="trip", seed=seed)
    if state:
        server.jump(session.id, state)
    width, height = VIEWPORTS[viewport]
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    await page.goto(server.session_url(session.id), wait_until="load")
    return session, context, page


async def _settled(page) -> None:
    await page.evaluate("window.__fsm.idle")


@pytest.mark.parametrize("seed", SEEDS)
async def test_dragging_or_pressing_a_slider_sends_the_stop_it_ends_at(browser, server, seed) -> None:
    session, context, page = await _open(browser, server, seed)
    try:
        thumb = await page.evaluate(_BOX, '[data-el="budget"] .slider-thumb')
        track = await page.evaluate(_BOX, '[data-el="budget"] .slider-track')
        await page.mouse.move(thumb["x"], thumb["y"])
        await page.mouse.down()
        await page.mouse.move(track["left"] + track["w"] * 0.7, thumb["y"], steps=5)
        await page.mouse.up()
        await _settled(page)
        assert server.state(session.id).get("budget") == 7
        assert await page.get_attribute('[data-el="budget"]', "aria-valuenow") == "7"
        seq = len(server.events(session.id))
        thumb = await page.evaluate(_BOX, '[data-el="budget"] .slider-thumb')
        await page.mouse.click(thumb["x"] + 1, thumb["y"])  # a press where it is: no event
        await _settled(page)
        assert len(server.events(session.id)) == seq
        stars = await page.evaluate(_BOX, '[data-el="stars"] .slider-track')
        await page.mouse.click(stars["left"] + stars["w"] * 0.45, stars["y"])  # nearest stop: the middle one
        await _settled(page)
        assert server.state(session.id).get("stars") == 3
        await page.focus('[data-el="budget"]')
        await page.keyboard.press("ArrowLeft")
        await _settled(page)
        assert server.state(session.id).get("budget") == 6
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_a_date_picker_opens_on_a_click_and_a_day_click_picks_it(browser, server, viewport) -> None:
    session, context, page = await _open(browser, server, SEEDS[1], viewport)
    try:
        assert await page.locator(".date-grid").count() == 0
        await page.click('[data-el="day"] .date-toggle')
        await _settled(page)
        assert server.state(session.id).get("day_open") is True
        assert await page.locator('[data-el="day"] button.dg-day').count() == 3  # the days one may pick
        await page.click('[data-el="day"] [data-value="2026-06-20"]')
        await _settled(page)
        state = server.state(session.id)
        assert state.get("day") == "2026-06-20" and state.get("day_open") is False
        assert "Sat, Jun 20, 2026" in await page.inner_text('[data-el="day"]')
        assert [e.event.event for e in server.events(session.id)] == ["open", "pick"]
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_dragging_a_handle_reorders_the_list(browser, server, viewport) -> None:
    session, context, page = await _open(browser, server, SEEDS[0], viewport)
    try:
        await page.locator(".sortable-list").scroll_into_view_if_needed()
        last = await page.evaluate(_BOX, '[data-el="stop"][data-value="2"] .drag-handle')
        first = await page.evaluate(_BOX, '[data-el="stop"][data-value="0"]')
        await page.mouse.move(last["x"], last["y"])
        await page.mouse.down()
        await page.mouse.move(last["x"], first["y"] - first["h"] / 4, steps=8)
        await page.mouse.up()
        await _settled(page)
        assert server.state(session.id).get("stops") == ("lisbon", "paris", "rome")
        assert [e.event.value for e in server.events(session.id)] == ["2>0"]
        titles = await page.locator(".sortable-item .title").all_inner_texts()
        assert titles == ["Lisbon", "Paris", "Rome"]
        await page.locator(".sortable-list").scroll_into_view_if_needed()
        handle = await page.evaluate(_BOX, '[data-el="stop"][data-value="1"] .drag-handle')
        await page.mouse.move(handle["x"], handle["y"])
        await page.mouse.down()
        await page.mouse.move(handle["x"], handle["y"] + 3, steps=2)  # a wiggle in place: no event
        await page.mouse.up()
        await _settled(page)
        assert len(server.events(session.id)) == 1
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_the_same_state_seed_and_viewport_give_the_same_pixels(browser, server, viewport) -> None:
    shots = []
    for _ in range(2):
        _, context, page = await _open(browser, server, SEEDS[1], viewport, OPEN)
        try:
            shots.append(await page.screenshot(full_page=True))
        finally:
            await context.close()
    assert shots[0] == shots[1]


async def test_on_a_phone_the_widgets_parts_are_touch_targets(browser, server) -> None:
    _, context, page = await _open(browser, server, SEEDS[0], "phone", OPEN)
    try:
        sizes = await page.evaluate("""() => [...document.querySelectorAll(
            '.slider[data-el], .date-toggle, button.dg-day, .drag-handle')].map(el => {
              const r = el.getBoundingClientRect(); return [el.className, r.width, r.height]; })""")
        assert len(sizes) == 2 + 2 + 3 + 3
        assert all(h >= 44 for _, _, h in sizes), sizes
        assert all(w >= 44 for cls, w, _ in sizes if "dg-day" in cls or "drag-handle" in cls), sizes
        assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        await context.close()


async def test_the_element_list_names_each_widget_part(browser, server) -> None:
    _, context, page = await _open(browser, server, SEEDS[0], "desktop", OPEN)
    try:
        elements = {e["id"]: e for e in await page.evaluate(ELEMENTS_JS)}
        assert (elements["budget"]["role"], elements["budget"]["value"]) == ("slider", "3")
        assert (elements["stars"]["role"], elements["stars"]["value"]) == ("slider", "3 stars")
        assert elements["day"]["role"] == "combobox" and "Jun 13" in elements["day"]["value"]
        assert elements["day=2026-06-13"]["value"] == "selected" and elements["day=2026-06-12"]["role"] == "gridcell"
        assert (elements["stop=0"]["label"], elements["stop=0"]["value"]) == ("Rome", "position 1")
    finally:
        await context.close()


@pytest.fixture(scope="module")
async def templates_server():
    async with SiteServer([templates_spec()]) as srv:
        yield srv


def _templates_state(page: str, **changed) -> str:
    """The key of a state of the templates site: its initial variables, some changed."""
    initial = Machine(templates_spec()).initial
    return State(page, tuple((name, changed.get(name, value)) for name, value in initial.vars)).key()


async def _open_templates(browser, server, viewport: str, state: str):
    session = server.create_session("templates", goal="star_lunch", seed=SEEDS[0])
    server.jump(session.id, state)
    width, height = VIEWPORTS[viewport]
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    await page.goto(server.session_url(session.id), wait_until="load")
    return session, context, page


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_an_open_message_reads_in_a_pane_beside_the_inbox_or_under_it_on_a_phone(
        browser, templates_server, viewport) -> None:
    session, context, page = await _open_templates(browser, templates_server, viewport, _templates_state("inbox"))
    try:
        assert await page.locator(".split-view").count() == 0  # nothing open: the list alone
        await page.click('[data-el="m2"]')
        await _settled(page)
        assert templates_server.state(session.id).get("open_msg") == "m2"
        listed = await page.evaluate(_BOX, ".split-list")
        pane = await page.evaluate(_BOX, ".split-pane")
        assert "Tacos at noon?" in await page.inner_text(".split-pane")
        assert await page.get_attribute('[data-el="m2"]', "class") == "card media message active"
        if viewport == "desktop":
            assert pane["left"] >= listed["left"] + listed["w"] and abs(pane["y"] - pane["h"] / 2 - (listed["y"] - listed["h"] / 2)) < 2
        else:
            assert pane["y"] - pane["h"] / 2 >= listed["y"] + listed["h"] / 2
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_cards_named_by_dates_are_a_month_calendar(browser, templates_server, viewport) -> None:
    session, context, page = await _open_templates(browser, templates_server, viewport, _templates_state("month"))
    try:
        assert await page.inner_text(".calendar-month .cal-title") == "June 2026"
        heads = await page.evaluate("() => [...document.querySelectorAll('.calendar-month .cal-head')].map("
                                    "h => h.getBoundingClientRect().left)")
        cells = {el: await page.evaluate(_BOX, f'[data-el="{el}"]') for el in ("d3", "d12", "d30")}
        # June 3, 2026 is a Wednesday, the 12th a Friday, the 30th a Tuesday: each under its weekday
        for el, column in (("d3", 2), ("d12", 4), ("d30", 1)):
            assert abs(cells[el]["left"] - heads[column]) < 2, (el, cells[el], heads)
        assert cells["d12"]["y"] > cells["d3"]["y"] and cells["d12"]["h"] >= 44
        await page.click('[data-el="d12"]')
        await _settled(page)
        assert templates_server.state(session.id).page == "inbox"
    finally:
        await context.close()


async def test_tabs_on_a_detail_page_hold_their_content_in_a_panel_under_them(browser, templates_server) -> None:
    state = _templates_state("report(q2)", tab="numbers")
    _, context, page = await _open_templates(browser, templates_server, "desktop", state)
    try:
        assert await page.locator(".detail-head .hero").count() == 1
        tabs = await page.evaluate(_BOX, ".tabbed > .tabs")
        panel = await page.evaluate(_BOX, ".tabbed > .tab-panel")
        assert await page.inner_text(".tab-panel") == "Revenue $4.2M, costs $3.1M"
        assert abs((panel["y"] - panel["h"] / 2) - (tabs["y"] + tabs["h"] / 2)) < 2  # the panel starts where the bar ends
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_the_oracle_solves_every_goal_that_needs_a_widget_or_template(provider, viewport) -> None:
    """Every goal of the planner (each widget) and of the templates site, replayed by the
    oracle in a real browser at two layout seeds, reaches its goal with every
    event-sending step on a shortest path."""
    from fsm_sites.serving.client import LocalSiteClient
    from harness.fsm_tasks_cli import verify_one
    from harness.tasks.fsm import goal_tasks

    width, height = VIEWPORTS[viewport]
    verdicts = []
    async with SiteServer([planner_spec(), templates_spec()]) as server:
        sandbox = await provider.new_browser(viewport_width=width, viewport_height=height)
        try:
            for spec in (planner_spec(), templates_spec()):
                for seed in SEEDS:
                    for task in goal_tasks(spec):
                        verdicts.append(await verify_one(task, LocalSiteClient(server), sandbox, seed=seed))
        finally:
            await sandbox.close()
    assert len(verdicts) == 2 * (2 + 3)
    assert [(v.task_id, v.reason) for v in verdicts if not v.kept] == []


async def test_a_tables_headings_sort_its_rows_and_each_row_keeps_its_own_item(browser, templates_server) -> None:
    state = _templates_state("meetings")  # stored: Wed, Mon, Tue
    session, context, page = await _open_templates(browser, templates_server, "desktop", state)
    try:
        days = "() => [...document.querySelectorAll('.data-table tbody tr td:first-child')].map(td => td.innerText)"
        assert await page.evaluate(days) == ["Monday", "Tuesday", "Wednesday"]  # stored: Wed, Mon, Tue
        assert await page.get_attribute("th:has(.th-sort[data-value='-day'])", "aria-sort") == "ascending"
        listed = {e["id"]: e for e in await page.evaluate(ELEMENTS_JS)}
        assert (listed["row=-day"]["label"], listed["row=-day"]["value"]) == ("Sort by Day", "ascending")
        await page.click(".th-sort[data-value='-day']")
        await _settled(page)
        assert templates_server.state(session.id).get("order") == "-day"
        assert await page.evaluate(days) == ["Wednesday", "Tuesday", "Monday"]
        await page.click(".th-sort[data-value='time']")
        await _settled(page)
        assert await page.evaluate(days) == ["Wednesday", "Tuesday", "Monday"]  # 09:00, 09:00 (stored order), 14:00
        await page.click(".data-table tbody tr:last-child [data-el='cancel']")  # Monday's, stored second
        await _settled(page)
        assert [r.get("day") for r in templates_server.state(session.id).get("meetings")] == ["wed", "tue"]
    finally:
        await context.close()
