"""A paged, sortable data table (the bank's Activity) in real Chromium: the pager's buttons
send `page` with their number and the page shows that page's rows; a click on the page shown
or on a disabled Previous reaches the machine, which fires nothing; a heading sorts and goes
back to page 1; every theme family and a phone draw it (touch-sized, no sideways scroll);
the same state, seed and viewport give the same pixels; the element list names each button;
a row's Flag button flags that row (a badge on it, an Unflag button), and with those buttons
a phone still shows every column, none scrolled out of the table's box."""

from __future__ import annotations

import pytest

from fsm_sites.engine.state import UIEvent
from fsm_sites.library import load_machine, load_site
from fsm_sites.render import choose_style
from fsm_sites.serving.server import SiteServer
from sandboxes.browser.elements import ELEMENTS_JS
from sandboxes.viewports import VIEWPORTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

_FAMILIES: dict[str, int] = {}
for _seed in range(200):
    _FAMILIES.setdefault(choose_style(_seed)[0].family, _seed)
SEEDS = tuple(_FAMILIES.values())  # one layout seed per theme family
_REFS = "() => [...document.querySelectorAll('.data-table tbody tr td:first-child')].map(td => td.innerText)"


@pytest.fixture(scope="module")
async def server():
    async with SiteServer([load_site("bank")]) as srv:
        yield srv


def _activity(*events: UIEvent) -> str:
    machine = load_machine("bank")
    state = machine.step(machine.initial, UIEvent("home", "go_activity", "click", None))[1]
    for event in events:
        state = machine.step(state, event)[1]
    return state.key()


_SECOND_PAGE = UIEvent("activity", "row", "page", "2")  # SkyTrip (t6) and Acme Rentals (t4): over $500, flaggable


async def _open(browser, server, seed: int, viewport: str = "desktop", *events: UIEvent):
    session = server.create_session("bank", goal="activity_payee", seed=seed)
    server.jump(session.id, _activity(*events))
    width, height = VIEWPORTS[viewport]
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    await page.goto(server.session_url(session.id), wait_until="load")
    return session, context, page


async def _click(page, selector: str, *, disabled: bool = False) -> None:
    await page.click(selector, force=disabled)  # a mouse reaches an aria-disabled button too
    await page.evaluate("window.__fsm.idle")


async def test_the_pager_shows_each_page_and_refuses_what_the_machine_does_not_offer(browser, server) -> None:
    session, context, page = await _open(browser, server, SEEDS[0])
    try:
        assert await page.evaluate(_REFS) == ["#10239", "#10238", "#10237"]  # newest first, 3 a page
        assert await page.inner_text(".table-pager .pager-info") == "1-3 of 9"
        await _click(page, ".table-pager [aria-label='Page 2']")
        assert server.state(session.id).get("activity_page") == 2
        assert await page.evaluate(_REFS) == ["#10236", "#10235", "#10234"]
        assert await page.get_attribute(".table-pager [aria-label='Page 2']", "aria-current") == "page"
        await _click(page, ".table-pager [aria-label='Page 2']")  # the page shown: a step that fires nothing
        await _click(page, ".table-pager [aria-label='Next page']")
        assert await page.get_attribute(".table-pager [aria-label='Next page']", "aria-disabled") == "true"
        await _click(page, ".table-pager [aria-label='Next page']", disabled=True)  # past the last page: nothing
        fired = [r.verdict.transition_fired for r in server.events(session.id)]
        assert fired == [True, False, True, False]
        assert server.state(session.id).get("activity_page") == 3
        assert await page.evaluate(_REFS) == ["#10233", "#10232", "#10231"]
    finally:
        await context.close()


async def test_a_heading_sorts_the_whole_table_and_goes_back_to_page_one(browser, server) -> None:
    session, context, page = await _open(browser, server, SEEDS[0])
    try:
        await _click(page, ".table-pager [aria-label='Page 3']")
        await _click(page, ".th-sort[data-value='amount']")
        state = server.state(session.id)
        assert (state.get("activity_sort"), state.get("activity_page")) == ("amount", 1)
        assert await page.evaluate(_REFS) == ["#10238", "#10231", "#10233"]  # $2.75, $4.50, $25.00
        await _click(page, ".th-sort[data-value='-amount']")
        assert await page.evaluate(_REFS) == ["#10234", "#10236", "#10232"]  # $1,450.00, $512.00, $120.00
        await _click(page, ".data-table tbody tr:first-child [data-el='open']")
        assert server.state(session.id).page == "activity_row(t4)"
    finally:
        await context.close()


@pytest.mark.parametrize("seed", SEEDS)
async def test_every_theme_family_draws_the_pager_on_a_phone_as_touch_targets(browser, server, seed) -> None:
    _, context, page = await _open(browser, server, seed, "phone")
    try:
        sizes = await page.evaluate("""() => [...document.querySelectorAll('.table-pager .page-btn, .th-sort')]
            .map(el => { const r = el.getBoundingClientRect(); return [el.innerText, r.width, r.height]; })""")
        assert len(sizes) == 5 + 3  # Previous, 1-3, Next; Date, Payee, Amount
        assert all(h >= 44 for _, _, h in sizes), sizes
        assert all(w >= 44 for text, w, _ in sizes if text.strip().isdigit()), sizes
        assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        await context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
async def test_the_same_state_seed_and_viewport_give_the_same_pixels(browser, server, viewport) -> None:
    shots = []
    for _ in range(2):
        _, context, page = await _open(browser, server, SEEDS[1], viewport)
        try:
            shots.append(await page.screenshot(full_page=True))
        finally:
            await context.close()
    assert shots[0] == shots[1]


async def test_the_element_list_names_the_pager_and_the_headings(browser, server) -> None:
    _, context, page = await _open(browser, server, SEEDS[0])
    try:
        elements = {e["id"]: e for e in await page.evaluate(ELEMENTS_JS)}
        assert (elements["row=page1"]["label"], elements["row=page1"]["value"]) == ("Page 1", "current")
        assert elements["row=page2"]["role"] == "button" and elements["row=page2"]["value"] is None
        assert elements["row=amount"]["label"] == "Sort by Amount"
    finally:
        await context.close()


async def test_a_rows_flag_button_flags_its_own_row(browser, server) -> None:
    session, context, page = await _open(browser, server, SEEDS[0], "desktop", _SECOND_PAGE)
    try:
        assert await page.evaluate(_REFS) == ["#10236", "#10235", "#10234"]
        assert await page.locator("[data-el='flag']").count() == 2  # t6 and t4 only
        await _click(page, "[data-el='flag'][data-value='3']")  # Acme Rentals, t4
        flagged = [i.get("ref") for i in server.state(session.id).get("activity") if i.get("flagged")]
        assert flagged == ["t4"]
        assert await page.inner_text(".data-table tbody tr:nth-child(3) .row-mark") == "Flagged"
        assert await page.locator(".row-mark").count() == 1
        assert await page.get_attribute("[data-el='unflag']", "data-value") == "3"
    finally:
        await context.close()


@pytest.mark.parametrize("seed", SEEDS)
async def test_on_a_phone_a_table_with_row_actions_keeps_every_column_in_its_box(browser, server, seed) -> None:
    flag_t6 = UIEvent("activity", "flag", "click", "5")
    _, context, page = await _open(browser, server, seed, "phone", _SECOND_PAGE, flag_t6)
    try:
        assert await page.locator("[data-el='unflag'], [data-el='flag']").count() == 2
        box = await page.evaluate("""() => { const w = document.querySelector('.table-wrap');
            return [w.scrollWidth, w.clientWidth]; }""")
        assert box[0] <= box[1], box  # nothing to scroll sideways to: every button can be seen
        right = await page.evaluate("""() => Math.max(...[...document.querySelectorAll('.data-table .btn')]
            .map(b => b.getBoundingClientRect().right))""")
        assert right <= await page.evaluate("window.innerWidth")
    finally:
        await context.close()
