"""The oracle's actions for the widget events, from a probe of the page (no browser)."""

from __future__ import annotations

from fsm_sites.engine.machine import Edge
from harness.actions import Click, Key, Move, Scroll
from harness.tasks.fsm_oracle import next_action


def _probe(**kw):
    base = {"page": "home", "found": True, "box": {"x": 100, "y": 200, "w": 80, "h": 20}, "focused": False,
            "text": None, "selected": False, "escape": False, "anchor": [640, 400], "vw": 1280, "vh": 800}
    return base | kw


def test_hover_is_a_move_and_a_menu_closes_with_escape() -> None:
    hover = Edge("show_fee", "home", "fee", "hover", None)
    assert next_action(hover, _probe(), "home") == Move(x=100, y=200)
    close = Edge("account_escape", "home", "account", "close", None)
    assert next_action(close, _probe(escape=True), "home") == Key(keys=("escape",))
    tip_close = Edge("hide_fee", "home", "fee", "close", None)
    assert next_action(tip_close, _probe(), "home") == Click(x=100, y=200)  # the tip's × button


def test_scrolling_starts_where_no_tooltip_is() -> None:
    edge = Edge("sign_out", "home", "sign_out", "click", None)
    far = {"x": 100, "y": 1500, "w": 80, "h": 20}
    assert next_action(edge, _probe(box=far, anchor=[2, 400]), "home") == Scroll(x=2, y=400, dy=1100)
