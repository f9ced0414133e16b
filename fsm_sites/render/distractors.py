"""Seeded decoration with no transition: banners, newsletter boxes, ratings, help panels.

They look interactive (buttons, an input) but carry no ``data-el`` and send no event,
so an agent that clicks them wastes a step; they move the real elements around, so an
agent must look rather than memorize coordinates.
"""

from __future__ import annotations

import random
from html import escape

_PROMOS = (
    "Free delivery on your first order", "New: dark mode is here", "Members save 10% this week",
    "Invite a friend and get a bonus", "Scheduled maintenance on Sunday 02:00",
)
_RECENT = ("Getting started", "Keyboard shortcuts", "Privacy settings", "Release notes", "Billing FAQ")


def _banner(rng: random.Random, title: str) -> str:
    text = rng.choice(_PROMOS)
    return (
        f'<div class="distractor banner"><span><strong>{escape(title)}</strong> · {escape(text)}</span>'
        '<button type="button" class="btn secondary" tabindex="-1">Learn more</button></div>'
    )


def _newsletter(rng: random.Random, title: str) -> str:
    return (
        '<div class="distractor panel"><h2>Stay in the loop</h2>'
        f'<p class="body-text">Get {escape(title)} news in your inbox.</p>'
        '<div class="btn-row"><input class="input" type="text" tabindex="-1" placeholder="you@example.com">'
        '<button type="button" class="btn" tabindex="-1">Subscribe</button></div></div>'
    )


def _rating(rng: random.Random, title: str) -> str:
    stars = rng.randint(3, 5)
    return (
        '<div class="distractor panel"><span>How do you like ' + escape(title) + "?</span> "
        f'<span class="stars">{"★" * stars}{"☆" * (5 - stars)}</span> '
        f'<span class="badge">{rng.randint(120, 9800)} reviews</span></div>'
    )


def _help(rng: random.Random, title: str) -> str:
    items = "".join(f'<li><a href="#" tabindex="-1">{escape(t)}</a></li>' for t in rng.sample(_RECENT, 3))
    return f'<div class="distractor panel"><h2>Help center</h2><ul class="body-text">{items}</ul></div>'


_KINDS = (_banner, _newsletter, _rating, _help)


def distractors(seed: int, site: str, title: str, count: int) -> dict[str, list[str]]:
    """HTML snippets of ``count`` distractors keyed by where they go: top, bottom, side."""
    rng = random.Random(f"fsm-distractors:{seed}:{site}")
    placed: dict[str, list[str]] = {"top": [], "bottom": [], "side": []}
    for make in rng.sample(_KINDS, min(count, len(_KINDS))):
        placed[rng.choice(("top", "bottom", "side"))].append(make(rng, title))
    return placed
