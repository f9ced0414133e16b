"""The FSM oracle: turn the next edge of a shortest path into one screen action.

The oracle reads the page only to *locate* things (``data-el`` bounding boxes, the
focused input, whether a dropdown is open); what to do comes from the site's machine.
One edge may take several actions, each returned by its own ``cheat`` call:

- click / check / uncheck: Click at the element's centre (a radio group's option, by value).
- select: Click the dropdown's toggle, then (menu open) Click the option.
- an element in a collapsed navigation menu (narrow viewports): Click the menu button
  first (it opens the menu in the page; no event), then the element.
- input: Click the text field, select its old text with ctrl+a if any, TypeText the value,
  then Key(enter).
- an element outside the viewport: Scroll it into view first (from the middle of the
  viewport, or from an edge when a tooltip's trigger lies in the middle; for a drag: both
  its ends).
- widgets: a menu's or an accordion's click clicks its toggle; a tooltip's hover is a
  Move onto its trigger; close clicks a tooltip's close button, or presses Escape for a
  menu; a combobox's input types into its field like a text input, and its select
  clicks the field (which shows the suggestions), then the suggestion.
- change (a slider): Drag its thumb to the value's place on the track.
- open / pick (a date picker): Click its field, then (the grid open) the day.
- move (a sortable list, value ``from>to``): Drag the item's handle to where the other
  items' middles put it at ``to``.
- sort / page (a data table): Click the column heading / the pager button that sends it.
"""

from __future__ import annotations

import json
from typing import TypedDict, cast

from fsm_sites.engine.machine import Edge
from harness.actions import Action, Click, Drag, Key, Move, Scroll, TypeText, Wait

# Reads what the oracle needs about one element; returns null while the page is loading.
_PROBE = """(() => {
  const q = %s, value = %s, event = %s;
  if (!window.__fsm) return null;
  const sel = '[data-el="' + CSS.escape(q) + '"]';
  // One copy of a repeated element carries the event value itself (data-value on the host);
  // a table's heading or pager button carries its own event too (a page number is no row).
  const valued = value !== null ? sel + '[data-value="' + CSS.escape(value) + '"]' : null;
  const host = (valued && (document.querySelector(valued + '[data-ev="' + event + '"]')
    || document.querySelector(valued))) || document.querySelector(sel);
  const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
    return {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height}; };
  let target = host, menuOpen = false, option = null;
  if (host && value !== null && !host.hasAttribute('data-value') && host.querySelector('[data-value]')) {
    option = host.querySelector('[data-value="' + CSS.escape(value) + '"]');
    if (event !== 'select') target = option;
  }
  if (host && event === 'select') {
    const menu = host.querySelector('.dd-menu');
    menuOpen = !!menu && !menu.hidden;
    target = menuOpen ? option : host.querySelector('.dd-toggle');
  }
  // Widgets: a menu's or an accordion's toggle, a tooltip's trigger (hover) or close button,
  // a combobox's field (input; select while its suggestions are hidden) or suggestion.
  let field = host;
  if (host && host.hasAttribute('data-open') && event !== 'hover') {
    target = host.querySelector(event === 'close' ? '.tip-close' : ':scope > [data-ev="click"]') || host;
  }
  if (host && event === 'hover') target = host.querySelector('.tip-trigger') || host;
  if (host && host.getAttribute('data-kind') === 'combobox') {
    field = host.querySelector('input');
    const list = host.querySelector('.combo-list');
    menuOpen = !!list && list.getClientRects().length > 0;
    target = event === 'select' && menuOpen ? option : field;
  }
  // A date picker's field; a slider's value or a sortable's "from>to": a drag, from the
  // slider's thumb to the value's place on the track, or from the item's handle to where
  // the other items' middles put it at the wanted position.
  let drag = null;
  if (host && event === 'open') target = host.querySelector('.date-toggle');
  if (host && event === 'change') {
    const track = host.querySelector('.slider-track'), thumb = host.querySelector('.slider-thumb');
    const stops = (host.getAttribute('data-stops') || '').split(','), i = stops.indexOf(value);
    target = null;
    if (track && thumb && i >= 0) {
      const t = track.getBoundingClientRect(), from = box(thumb);
      drag = {x: from.x, y: from.y, to_x: t.left + t.width * i / Math.max(stops.length - 1, 1), to_y: from.y};
      target = thumb;
    }
  }
  if (event === 'move' && value !== null) {
    const [src, dst] = value.split('>').map(Number);
    const items = [...document.querySelectorAll(sel)];
    const item = items.find((it) => it.getAttribute('data-value') === String(src));
    const handle = item && item.querySelector('.drag-handle');
    const others = items.filter((it) => it !== item);
    target = null;
    if (handle && others.length) {
      const mids = others.map((it) => box(it).y), h = box(others[0]).h, from = box(handle);
      const toY = dst === 0 ? mids[0] - h / 4 : dst >= others.length ? mids[mids.length - 1] + h / 4
        : (mids[dst - 1] + mids[dst]) / 2;
      drag = {x: from.x, y: from.y, to_x: from.x, to_y: toY};
      target = handle;
    }
  }
  // A link in a collapsed navigation menu (a phone's hamburger) is reached by opening it.
  if (target && !target.getClientRects().length && target.closest('.navmenu')) {
    const toggle = document.querySelector('.hamburger');
    if (toggle && toggle.getClientRects().length) target = toggle;
  }
  // Where to scroll from: the middle, unless a tooltip's trigger is there (the pointer
  // moving onto it would show the tip: an event the path does not take).
  const cx = Math.floor(innerWidth / 2), cy = Math.floor(innerHeight / 2);
  const anchor = [[cx, cy], [cx, 2], [2, cy], [innerWidth - 3, cy]].find(([x, y]) => {
    const at = document.elementFromPoint(x, y); return !at || !at.closest('.tip-trigger'); }) || [cx, cy];
  const active = document.activeElement;
  return {page: document.body.getAttribute('data-page'), found: !!target, box: box(target), drag: drag,
          menuOpen: menuOpen, focused: !!field && active === field,
          text: field && field.value !== undefined ? field.value : null,
          selected: !!field && field.value !== undefined && field.value.length > 0 &&
                    field.selectionStart === 0 && field.selectionEnd === field.value.length,
          escape: !!host && event === 'close' && host.getAttribute('data-kind') === 'menu',
          anchor: anchor, vw: window.innerWidth, vh: window.innerHeight};
})()"""


class Point(TypedDict):
    x: float
    y: float


class DragEnds(TypedDict):
    x: float
    y: float
    to_x: float
    to_y: float


class Probe(TypedDict, total=False):
    """What ``_PROBE`` answers about an edge's element."""

    page: str | None
    found: bool
    box: Point | None
    drag: DragEnds | None
    menuOpen: bool
    focused: bool
    text: str | None
    selected: bool
    escape: bool
    anchor: list[int]
    vw: int
    vh: int


def probe_expression(edge: Edge) -> str:
    """The JS expression that describes ``edge``'s element on the page."""
    return _PROBE % (json.dumps(edge.element), json.dumps(edge.value), json.dumps(edge.event))


def _in_view(box: Point, vw: int, vh: int) -> bool:
    return 0 <= box["x"] < vw and 0 <= box["y"] < vh


def _click(box: Point) -> Click:
    return Click(x=max(0, int(box["x"])), y=max(0, int(box["y"])))


def _drag(drag: DragEnds | None, vw: int, vh: int) -> Action:
    """A slider's or a sortable's drag; the page is still loading without one."""
    if not drag:
        return Wait(seconds=0.2)

    def at(value: float, limit: int) -> int:
        return min(max(0, int(round(value))), limit - 1)

    return Drag(x=at(drag["x"], vw), y=at(drag["y"], vh), to_x=at(drag["to_x"], vw), to_y=at(drag["to_y"], vh))


def next_action(edge: Edge, answer: object, current_page: str) -> Action:
    """The one action that moves the page toward firing ``edge`` (see the module docstring);
    ``answer`` is what the page said to ``probe_expression``."""
    probe = cast(Probe, answer) if isinstance(answer, dict) else None
    box = probe.get("box") if probe else None
    if not probe or probe.get("page") != current_page or not probe.get("found") or not box:
        return Wait(seconds=0.2)  # the page is still loading the new state
    vw, vh = int(probe["vw"]), int(probe["vh"])
    if not _in_view(box, vw, vh):
        x, y = probe.get("anchor") or (vw // 2, vh // 2)
        return Scroll(x=int(x), y=int(y), dy=int(box["y"] - vh / 2))
    drag = probe.get("drag")
    if edge.event in ("change", "move") and drag and not _in_view({"x": drag["to_x"], "y": drag["to_y"]}, vw, vh):
        x, y = probe.get("anchor") or (vw // 2, vh // 2)
        return Scroll(x=int(x), y=int(y), dy=int((drag["y"] + drag["to_y"]) / 2 - vh / 2))  # both ends in view
    if edge.event in ("change", "move"):
        return _drag(drag, vw, vh)
    if edge.event == "hover":
        return Move(x=max(0, int(box["x"])), y=max(0, int(box["y"])))
    if edge.event == "close" and probe.get("escape"):
        return Key(keys=("escape",))
    if edge.event != "input":
        return _click(box)
    wanted = edge.value or ""
    if not probe.get("focused"):
        return _click(box)
    text = probe.get("text") or ""
    if text == wanted:
        return Key(keys=("enter",))
    if text and not probe.get("selected"):
        return Key(keys=("ctrl", "a"))
    return TypeText(text=wanted) if wanted else Key(keys=("backspace",))
